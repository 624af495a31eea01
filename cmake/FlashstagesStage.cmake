# How a stage joins the build.
#
# flashstages_add_stage(<prefix> ENTRY <C name> PROBLEM <ATTENTION|ATTENTION_BWD|GEMM> VERSIONS v1 v2 …
#                       ARCHS <CUDA architectures> [VERSION_ARCHS "vN …:<architectures>" …]
#                       [SOURCES <more .cu files>] [MAIN main.cu]
#                       [TEST test.cu] [BENCH bench.cu] [EXE name] [TOOLS <libraries>])
#
# A stage's folder holds one translation unit per version, vN.cu (its launch, descriptor and C entry,
# which includes the version's kernel, vN_<technique>.cuh), and versions.cu, its registry. Those are
# the stage's kernels, with SOURCES where the stage has more: host code, the kernels its versions share
# (compiled once), or a version's kernel instances compiled in groups, a file each (instances/vN_*.cu),
# so that a version of many instances compiles side by side. VERSIONS lists the versions in order, so
# adding one is a word here. The C entry of version vN is <ENTRY>_vN, taking the PROBLEM's
# params struct (fs_attention_params, fs_attention_bwd_params, fs_gemm_params): CMake declares every
# stage's entries in the generated public header flashstages_entries.h, which flashstages.h includes,
# so a new version needs no edit outside its stage.
#
# The stage's kernels and launchers are an object library, <prefix>_kernels, compiled for the stage's
# own CUDA architectures and linked into the one shared library, libflashstages. CMake has no
# per-source architectures: an object library per stage is how two stages get different ones. ARCHS
# names them (80 for stages 01 to 06; 90a for 07), and a build whose CMAKE_CUDA_ARCHITECTURES is pinned
# (a GPU preset) replaces them with the pinned ones (flashstages_stage_archs, below). VERSION_ARCHS gives
# versions architectures of their own where they alone need more than their stage ("v16:80 90": stage
# 06's v16 holds an sm_90 path, v1 to v15 none; stage 05's v3 to v10 too): their vN.cu and
# instances/vN_*.cu then form an object library of their own (<prefix>_kernels_v16), so that the other
# versions are not compiled twice for nothing. The GPUs those architectures run on reach the stage's
# sources as FS_STAGE_ARCHS (compute capabilities, "80 86 87 89") and FS_STAGE_PTX (the PTX they carry,
# 80, or 0): each kernel descriptor states them, and a launch on any other GPU returns FS_ERR_UNSUPPORTED_DEVICE.
#
# The stage also gets its executable (<prefix>_<exe>, or <prefix> without EXE), its doctest binary
# (<prefix>_test, each TEST_CASE a CTest test labelled by its suite, cpu or gpu; exit code 77 means
# skipped) and its benchmark binary (<prefix>_bench), all linked with the host tools (and TOOLS,
# e.g. flashstages_cublas). A stage of two rungs (stage 07: gemm/, attention/) adds each as its own
# prefix (stage07_gemm), whose executable is then the prefix alone.
# Stage sources include each other's headers only by stage-qualified paths
# ("stages/04_flash_fwd/versions.h"): no stage folder is on any include path.

# Compute capabilities a GPU can have, for expanding an architecture into the GPUs its code runs on.
set(FLASHSTAGES_KNOWN_CCS 80 86 87 89 90 100 103 110 120 121)

# flashstages_runs_on(<out> <archs>): the compute capabilities that the machine code built for <archs>
# runs on, separated by spaces. sm_XY code runs on X.Y and the later minor versions of X (sm_80 on 8.6
# and 8.9); architecture-specific code (sm_90a) runs on its own version alone; PTX alone (80-virtual)
# is no machine code. A newer major version runs the PTX instead (flashstages_ptx_of).
function(flashstages_runs_on out archs)
  set(ccs)
  foreach(arch IN LISTS archs)
    if(NOT arch MATCHES "^([0-9]+)(a?)(-real|-virtual)?$")
      message(FATAL_ERROR "flashstages: CUDA architecture '${arch}' is not a number such as 80 or 90a; "
                          "list the architectures (e.g. -DCMAKE_CUDA_ARCHITECTURES=\"80;90\")")
    endif()
    set(num ${CMAKE_MATCH_1})
    if(CMAKE_MATCH_3 STREQUAL "-virtual")
      continue()
    endif()
    if(CMAKE_MATCH_2 STREQUAL "a")
      list(APPEND ccs ${num})
      continue()
    endif()
    math(EXPR major "${num} / 10")
    foreach(cc IN LISTS FLASHSTAGES_KNOWN_CCS)
      math(EXPR cc_major "${cc} / 10")
      if(cc_major EQUAL major AND cc GREATER_EQUAL num)
        list(APPEND ccs ${cc})
      endif()
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES ccs)
  list(SORT ccs COMPARE NATURAL)
  string(REPLACE ";" " " ccs "${ccs}")
  set(${out} "${ccs}" PARENT_SCOPE)
endfunction()

# flashstages_ptx_of(<out> <archs>): the oldest PTX that code built for <archs> carries, as a compute
# capability (80 for compute_80), or 0 for none. In CMake's terms an architecture without a suffix is
# machine code and PTX, -real machine code alone, -virtual PTX alone. The driver compiles PTX for any
# GPU of that compute capability or newer at the kernel's first launch (JIT), which is how a GPU newer
# than the build runs it. Architecture-specific PTX (compute_90a) runs on its own version alone: none.
function(flashstages_ptx_of out archs)
  set(ptx 0)
  foreach(arch IN LISTS archs)
    if(arch MATCHES "^([0-9]+)(-virtual)?$" AND (ptx EQUAL 0 OR CMAKE_MATCH_1 LESS ptx))
      set(ptx ${CMAKE_MATCH_1})
    endif()
  endforeach()
  set(${out} ${ptx} PARENT_SCOPE)
endfunction()

# flashstages_stage_archs(<out> <prefix> <archs>): the CUDA architectures (CMake's list) that a stage
# naming <archs> compiles for.
#   Not pinned (the release, debug and ci presets): <archs>, each as machine code, and the newest that is
#     not architecture-specific as PTX too, so that a newer GPU than any of them JIT-compiles it:
#     "80" -> 80 (sm_80 and compute_80), "80 90" -> 80-real 90, "90a" -> 90a-real.
#   Pinned (CMAKE_CUDA_ARCHITECTURES given: a GPU preset, or scripts/gpu_archs.sh on a GPU): the pinned
#     architectures alone, for the GPU the build is for. A stage of architecture-specific code (07:
#     90a) takes its own architecture where the pin names that GPU (90 -> 90a-real); where it names
#     none (a GPU other than sm_90), the stage keeps its own, and its versions refuse the pinned GPU.
function(flashstages_stage_archs out prefix archs)
  set(specific)
  set(portable)
  foreach(arch IN LISTS archs)
    if(arch MATCHES "^([0-9]+)a$")
      list(APPEND specific ${CMAKE_MATCH_1})
    elseif(arch MATCHES "^[0-9]+$")
      list(APPEND portable ${arch})
    else()
      message(FATAL_ERROR "flashstages_add_stage(${prefix}): ARCHS takes architectures such as 80 or 90a, not "
                          "'${arch}' (the stage function decides which carry PTX)")
    endif()
  endforeach()
  set(result)
  if(specific)
    foreach(num IN LISTS specific)
      if(FLASHSTAGES_ARCHS_PINNED AND NOT "${CMAKE_CUDA_ARCHITECTURES}" MATCHES "(^|;)${num}(-real|-virtual)?(;|$)")
        message(STATUS "flashstages: ${prefix} needs sm_${num}a, which the pinned architectures "
                       "(${CMAKE_CUDA_ARCHITECTURES}) are not: built for ${num}a anyway, its versions refuse "
                       "other GPUs (FS_ERR_UNSUPPORTED_DEVICE)")
      endif()
      list(APPEND result ${num}a-real)
    endforeach()
  elseif(FLASHSTAGES_ARCHS_PINNED)
    set(result ${CMAKE_CUDA_ARCHITECTURES})
  else()
    list(SORT portable COMPARE NATURAL)
    list(POP_BACK portable newest)
    foreach(arch IN LISTS portable)
      list(APPEND result ${arch}-real)
    endforeach()
    list(APPEND result ${newest})
  endif()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# flashstages_kernel_archs(<target> <prefix> <archs>): compile <target>'s CUDA sources for the
# architectures flashstages_stage_archs gives, and hand its sources what they run on (FS_STAGE_ARCHS,
# FS_STAGE_PTX). <prefix> names it in messages.
function(flashstages_kernel_archs target prefix archs)
  flashstages_stage_archs(resolved ${prefix} "${archs}")
  flashstages_runs_on(ccs "${resolved}")
  flashstages_ptx_of(ptx "${resolved}")
  set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES "${resolved}")
  target_compile_definitions(${target} PRIVATE "FS_STAGE_ARCHS=\"${ccs}\"" FS_STAGE_PTX=${ptx})
  set(jit "")
  if(NOT ptx EQUAL 0)
    set(jit ", and newer GPUs through its PTX (compute_${ptx})")
  endif()
  message(STATUS "flashstages: ${prefix} built for ${resolved}: runs on compute capability ${ccs}${jit}")
endfunction()

# Compile options of every CUDA source that holds kernels.
# -Xfatbin=-compress-all: the fatbin's machine code and PTX compressed (the driver expands them at
# load), so that a kernel compiled for more architectures weighs little in libflashstages.
function(flashstages_kernel_options target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xfatbin=-compress-all>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${FLASHSTAGES_FAST_MATH}>>:--use_fast_math>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${FLASHSTAGES_PTXAS_VERBOSE}>>:-Xptxas=-v>)
endfunction()

function(flashstages_add_stage prefix)
  cmake_parse_arguments(ARG "" "MAIN;TEST;BENCH;EXE;ENTRY;PROBLEM" "VERSIONS;SOURCES;ARCHS;VERSION_ARCHS;TOOLS"
                        ${ARGN})
  if(NOT ARG_ENTRY OR NOT ARG_VERSIONS)
    message(FATAL_ERROR "flashstages_add_stage(${prefix}): name its C entry (ENTRY fs_flash_fwd) and its VERSIONS")
  endif()
  if(NOT ARG_PROBLEM MATCHES "^(ATTENTION|ATTENTION_BWD|GEMM)$")
    message(FATAL_ERROR "flashstages_add_stage(${prefix}): PROBLEM is ATTENTION, ATTENTION_BWD or GEMM, not '${ARG_PROBLEM}'")
  endif()
  set(kernels versions.cu ${ARG_SOURCES})
  foreach(version IN LISTS ARG_VERSIONS)
    if(NOT version MATCHES "^v[0-9]+$")
      message(FATAL_ERROR "flashstages_add_stage(${prefix}): a version is v<number>, not '${version}'")
    endif()
    list(APPEND kernels ${version}.cu)
  endforeach()
  foreach(file IN LISTS kernels)
    if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${file})
      message(FATAL_ERROR "flashstages_add_stage(${prefix}): ${CMAKE_CURRENT_SOURCE_DIR}/${file} does not exist "
                          "(each version vN has its launch in vN.cu; versions.cu is the registry)")
    endif()
  endforeach()
  string(REPLACE ";" "," versions "${ARG_VERSIONS}")  # one item of the global list per stage
  set_property(GLOBAL APPEND PROPERTY FLASHSTAGES_ENTRIES "${prefix}|${ARG_ENTRY}|${ARG_PROBLEM}|${versions}")
  if(NOT ARG_ARCHS)
    message(FATAL_ERROR "flashstages_add_stage(${prefix}): name the CUDA architectures its kernels need (ARCHS 80)")
  endif()

  # Versions with architectures of their own: their launches and instances leave the stage's object
  # library for one of their own, one per VERSION_ARCHS item.
  set(groups ${prefix}_kernels)
  set(${prefix}_kernels_archs "${ARG_ARCHS}")
  foreach(spec IN LISTS ARG_VERSION_ARCHS)
    if(NOT spec MATCHES "^(v[0-9]+( v[0-9]+)*):([0-9a ]+)$")
      message(FATAL_ERROR "flashstages_add_stage(${prefix}): VERSION_ARCHS takes \"vN …:<architectures>\" such as "
                          "\"v16:80 90\", not '${spec}'")
    endif()
    set(spec_archs "${CMAKE_MATCH_3}")  # before the next regex resets CMAKE_MATCH_*
    string(REGEX REPLACE " +" ";" spec_versions "${CMAKE_MATCH_1}")
    string(REGEX REPLACE " +" ";" spec_archs "${spec_archs}")
    string(REPLACE ";" "_" group "${prefix}_kernels_${spec_versions}")  # stage05_kernels_v3_v4_…, stage06_kernels_v16
    set(own)
    foreach(version IN LISTS spec_versions)
      if(NOT version IN_LIST ARG_VERSIONS)
        message(FATAL_ERROR "flashstages_add_stage(${prefix}): VERSION_ARCHS names ${version}, "
                            "which VERSIONS does not list")
      endif()
      list(APPEND own ${version}.cu)
      foreach(file IN LISTS ARG_SOURCES)
        if(file MATCHES "^instances/${version}_")
          list(APPEND own ${file})
        endif()
      endforeach()
    endforeach()
    list(REMOVE_ITEM kernels ${own})
    list(APPEND groups ${group})
    set(${group}_sources ${own})
    set(${group}_archs "${spec_archs}")
  endforeach()
  set(${prefix}_kernels_sources ${kernels})

  foreach(group IN LISTS groups)
    add_library(${group} OBJECT ${${group}_sources})
    string(REPLACE "_kernels" "" name ${group})  # stage06, stage06_v16: how the configure messages name it
    flashstages_kernel_archs(${group} ${name} "${${group}_archs}")
    target_link_libraries(${group} PRIVATE flashstages_headers)
    flashstages_kernel_options(${group})
    # As objects, not as a linked target: the installed package then knows nothing of the stages.
    target_sources(flashstages PRIVATE $<TARGET_OBJECTS:${group}>)
  endforeach()
  set_property(GLOBAL APPEND PROPERTY FLASHSTAGES_STAGES ${prefix})

  if(ARG_MAIN)
    set(exe ${prefix})
    if(ARG_EXE)
      set(exe ${prefix}_${ARG_EXE})
    endif()
    add_executable(${exe} ${ARG_MAIN})
    target_link_libraries(${exe} PRIVATE flashstages_tools ${ARG_TOOLS})
  endif()

  if(ARG_TEST AND FLASHSTAGES_BUILD_TESTS)
    add_executable(${prefix}_test ${ARG_TEST})
    target_link_libraries(${prefix}_test PRIVATE flashstages_tools flashstages_test_main ${ARG_TOOLS})
    doctest_discover_tests(${prefix}_test ADD_LABELS 1 PROPERTIES SKIP_RETURN_CODE 77)
  endif()

  if(ARG_BENCH AND FLASHSTAGES_BUILD_BENCHMARKS)
    add_executable(${prefix}_bench ${ARG_BENCH})
    target_link_libraries(${prefix}_bench PRIVATE flashstages_tools flashstages_bench_main ${ARG_TOOLS})
  endif()
endfunction()

# The registry's table (common/lib/kernel.cpp reads it): one KernelList per stage, in the order the
# stages were added. Each stage defines <prefix>_kernels() in its versions.cu. And the public header
# of every stage's C entries, flashstages_entries.h (flashstages.h includes it; installed beside it).
function(flashstages_write_kernel_table)
  get_property(stages GLOBAL PROPERTY FLASHSTAGES_STAGES)
  set(decls "")
  set(items "")
  foreach(stage IN LISTS stages)
    string(APPEND decls "KernelList ${stage}_kernels();\n")
    string(APPEND items "    ${stage}_kernels(),\n")
  endforeach()
  list(LENGTH stages count)
  set(file ${PROJECT_BINARY_DIR}/generated/kernel_table.cpp)
  file(CONFIGURE OUTPUT ${file} CONTENT
"// Written by CMake (cmake/FlashstagesStage.cmake): every stage's list of kernels, in stage order.
#include \"common/lib/kernel.h\"

namespace fs {

${decls}
extern const KernelList kStageKernels[] = {
${items}};
extern const int kStageCount = ${count};

}  // namespace fs
")
  target_sources(flashstages PRIVATE ${file})

  set(params_ATTENTION fs_attention_params)
  set(params_ATTENTION_BWD fs_attention_bwd_params)
  set(params_GEMM fs_gemm_params)
  get_property(entries GLOBAL PROPERTY FLASHSTAGES_ENTRIES)
  set(lines "")
  foreach(entry IN LISTS entries)
    string(REPLACE "|" ";" fields "${entry}")
    list(GET fields 0 stage)
    list(GET fields 1 name)
    list(GET fields 2 problem)
    list(GET fields 3 versions)
    string(REPLACE "," ";" versions "${versions}")
    string(APPEND lines "\n/* ${stage} */\n")
    foreach(version IN LISTS versions)
      string(APPEND lines "FS_API int ${name}_${version}(const ${params_${problem}}* params, void* stream);\n")
    endforeach()
  endforeach()
  file(CONFIGURE OUTPUT ${FLASHSTAGES_ENTRIES_HEADER} CONTENT
"/* Written by CMake (cmake/FlashstagesStage.cmake) from each stage's list of versions: the C entry of every
 * version of every stage, all with the same arguments as their stage's first. flashstages.h includes this
 * file; fs_kernel_count / fs_kernel_at describe each entry (what it takes, the GPUs it runs on). */
#ifndef FLASHSTAGES_ENTRIES_H
#define FLASHSTAGES_ENTRIES_H

#ifdef __cplusplus
extern \"C\" {
#endif
${lines}
#ifdef __cplusplus
}
#endif

#endif /* FLASHSTAGES_ENTRIES_H */
")
endfunction()
