/* Calls the installed library through its C header: a status name, the kernels it holds, and one
 * version's C entry as the generated flashstages_entries.h declares it (a null params pointer is refused). */
#include <flashstages.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  const char* name = fs_status_name(FS_ERR_UNSUPPORTED_DEVICE);
  int count = fs_kernel_count();
  const fs_kernel_info* first = fs_kernel_at(0);
  printf("%s; %d kernels, the first %s (%s/%s)\n", name, count, first ? first->entry : "none",
         first ? first->stage : "-", first ? first->version : "-");
  int refused = fs_flash_fwd_v1(NULL, NULL);
  printf("fs_flash_fwd_v1(NULL, NULL): %s\n", fs_status_name(refused));
  return strcmp(name, "FS_ERR_UNSUPPORTED_DEVICE") == 0 && count > 0 && first != NULL &&
                 refused == FS_ERR_NULL_POINTER
             ? 0
             : 1;
}
