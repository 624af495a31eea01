/* Calls the installed library through its C header: a status name, and the kernels it holds. */
#include <flashstages.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  const char* name = fs_status_name(FS_ERR_UNSUPPORTED_DEVICE);
  int count = fs_kernel_count();
  const fs_kernel_info* first = fs_kernel_at(0);
  printf("%s; %d kernels, the first %s (%s/%s)\n", name, count, first ? first->entry : "none",
         first ? first->stage : "-", first ? first->version : "-");
  return strcmp(name, "FS_ERR_UNSUPPORTED_DEVICE") == 0 && count > 0 && first != NULL ? 0 : 1;
}
