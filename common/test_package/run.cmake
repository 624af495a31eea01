# ctest: install the build tree into a fresh prefix, then configure, build and run the consumer project
# against it, as another project would (find_package(flashstages) with CMAKE_PREFIX_PATH).
#   cmake -DBUILD_DIR=... -DCONSUMER=... -DWORK=... -DGENERATOR=... -P run.cmake
file(REMOVE_RECURSE ${WORK})
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ${out}")
endfunction()
step("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/prefix)
step("configure the consumer" ${CMAKE_COMMAND} -S ${CONSUMER} -B ${WORK}/build -G ${GENERATOR}
     -DCMAKE_PREFIX_PATH=${WORK}/prefix -DCMAKE_BUILD_TYPE=Release)
step("build the consumer" ${CMAKE_COMMAND} --build ${WORK}/build)
step("run the consumer" ${WORK}/build/consumer)
