# doctest, Google Benchmark and CLI11: the system's packages when present (Debian: doctest-dev,
# libbenchmark-dev, libcli11-dev), otherwise fetched from their repositories at configure time.
include(FetchContent)

find_package(CLI11 CONFIG QUIET)
if(NOT CLI11_FOUND)
  message(STATUS "CLI11 not found: fetching v2.4.2")
  FetchContent_Declare(cli11 GIT_REPOSITORY https://github.com/CLIUtils/CLI11.git GIT_TAG v2.4.2 GIT_SHALLOW TRUE)
  FetchContent_MakeAvailable(cli11)
endif()

if(FLASHSTAGES_BUILD_TESTS)
  find_package(doctest CONFIG QUIET)
  if(NOT doctest_FOUND)
    message(STATUS "doctest not found: fetching v2.4.11")
    FetchContent_Declare(doctest GIT_REPOSITORY https://github.com/doctest/doctest.git GIT_TAG v2.4.11
                         GIT_SHALLOW TRUE)
    FetchContent_MakeAvailable(doctest)
    list(APPEND CMAKE_MODULE_PATH ${doctest_SOURCE_DIR}/scripts/cmake)
    include(doctest)
  else()
    include(${doctest_DIR}/doctest.cmake)
  endif()
endif()

if(FLASHSTAGES_BUILD_BENCHMARKS)
  find_package(benchmark CONFIG QUIET)
  if(NOT benchmark_FOUND)
    message(STATUS "Google Benchmark not found: fetching v1.8.3")
    set(BENCHMARK_ENABLE_TESTING OFF CACHE BOOL "" FORCE)
    set(BENCHMARK_ENABLE_GTEST_TESTS OFF CACHE BOOL "" FORCE)
    FetchContent_Declare(benchmark GIT_REPOSITORY https://github.com/google/benchmark.git GIT_TAG v1.8.3
                         GIT_SHALLOW TRUE)
    FetchContent_MakeAvailable(benchmark)
  endif()
endif()
