# flashstages_add_stage(<prefix> KERNELS <cu files> [MAIN main.cu] [TEST test.cu] [BENCH bench.cu] [EXE name])
#
# The kernels and launchers go into the one shared library, libflashstages; the stage gets its
# executable (<prefix>_<exe>), its doctest binary (<prefix>_test, each TEST_CASE a CTest test labelled
# by its suite, cpu or gpu; exit code 77 means skipped) and its benchmark binary (<prefix>_bench).
function(flashstages_add_stage prefix)
  cmake_parse_arguments(ARG "" "MAIN;TEST;BENCH;EXE" "KERNELS" ${ARGN})
  target_sources(flashstages PRIVATE ${ARG_KERNELS})
  target_include_directories(flashstages PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}>)

  if(ARG_MAIN)
    add_executable(${prefix}_${ARG_EXE} ${ARG_MAIN})
    target_link_libraries(${prefix}_${ARG_EXE} PRIVATE flashstages_host)
  endif()

  if(ARG_TEST AND FLASHSTAGES_BUILD_TESTS)
    add_executable(${prefix}_test ${ARG_TEST})
    target_link_libraries(${prefix}_test PRIVATE flashstages_host flashstages_test_main)
    doctest_discover_tests(${prefix}_test ADD_LABELS 1
                           PROPERTIES SKIP_RETURN_CODE 77)
  endif()

  if(ARG_BENCH AND FLASHSTAGES_BUILD_BENCHMARKS)
    add_executable(${prefix}_bench ${ARG_BENCH})
    target_link_libraries(${prefix}_bench PRIVATE flashstages_host flashstages_bench_main)
  endif()
endfunction()
