# FarthingDependencies.cmake — system packages only, each missing one named with the Debian
# package that provides it (tools/setup.sh installs them all).

macro(farthing_require found what debian_package)
  if(NOT ${found})
    message(FATAL_ERROR "farthing needs ${what}, which was not found. "
                        "On Debian/Ubuntu: apt-get install ${debian_package} "
                        "(or run tools/setup.sh, which installs every dependency).")
  endif()
endmacro()

find_package(OpenMP COMPONENTS CXX)
farthing_require(OpenMP_CXX_FOUND "OpenMP" "libgomp1 (part of g++)")

find_package(MPI COMPONENTS C CXX)
farthing_require(MPI_FOUND "MPI (Open MPI)" "libopenmpi-dev openmpi-bin")

set(HDF5_PREFER_PARALLEL ON)
find_package(HDF5 COMPONENTS C)
farthing_require(HDF5_FOUND "HDF5" "libhdf5-openmpi-dev")
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR "farthing needs the parallel (MPI) build of HDF5, found a serial one at "
                      "${HDF5_INCLUDE_DIRS}. On Debian: apt-get install libhdf5-openmpi-dev")
endif()

find_package(yaml-cpp CONFIG QUIET)
farthing_require(yaml-cpp_FOUND "yaml-cpp" "libyaml-cpp-dev")

find_package(dnnl CONFIG QUIET)
farthing_require(dnnl_FOUND "oneDNN" "libdnnl-dev")

find_package(nlohmann_json CONFIG QUIET)
farthing_require(nlohmann_json_FOUND "nlohmann/json (config.json, tokenizer.json, safetensors headers)"
                 "nlohmann-json3-dev")

# CLI11 (header-only): the farthing command line's options, their --help and their errors.
find_package(CLI11 CONFIG QUIET)
farthing_require(CLI11_FOUND "CLI11 (the command line's option parsing)" "libcli11-dev")

# PCRE2 (8-bit, UTF + Unicode properties): the pre-tokenizer regexes of GPT-2, Llama-3 and
# Qwen2.5 use \p{L}, \p{N} and look-ahead, which std::regex cannot express.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PCRE2 QUIET IMPORTED_TARGET libpcre2-8)
endif()
farthing_require(PCRE2_FOUND "PCRE2" "libpcre2-dev pkg-config")

find_package(GTest CONFIG QUIET)
if(NOT GTest_FOUND)
  find_package(GTest QUIET)
endif()
farthing_require(GTest_FOUND "GoogleTest" "libgtest-dev")

# CUDA: AUTO builds it when nvcc is found, ON insists, OFF skips.
set(FARTHING_WITH_CUDA OFF)
if(NOT FARTHING_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Hopper (sm_90) SASS plus compute_90 PTX that newer GPUs can JIT: "90" gives both.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    if(CMAKE_VERSION VERSION_LESS 3.26)  # CMake < 3.26 knows no C++20 flag for nvcc
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    find_library(FARTHING_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu)
    find_path(FARTHING_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include)
    if(NOT FARTHING_NCCL_LIBRARY OR NOT FARTHING_NCCL_INCLUDE)
      message(FATAL_ERROR "CUDA was found but NCCL was not. On Debian with NVIDIA's repository: "
                          "apt-get install libnccl-dev (or configure with -DFARTHING_CUDA=OFF)")
    endif()
    set(FARTHING_WITH_CUDA ON)
    message(STATUS "farthing: CUDA backend ON (architectures ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(FARTHING_CUDA STREQUAL "ON")
    message(FATAL_ERROR "FARTHING_CUDA=ON but no CUDA compiler was found. Install the CUDA "
                        "toolkit (nvcc on PATH or /usr/local/cuda) or use -DFARTHING_CUDA=AUTO/OFF")
  else()
    message(STATUS "farthing: CUDA backend OFF (no nvcc found)")
  endif()
endif()

# cuDNN's fused attention (kernels/cuda/attention_cudnn.h): headers only at build time, the
# cudnn-frontend's (header-only) and cuDNN's own, from the PyPI wheels nvidia-cudnn-frontend and
# nvidia-cudnn-cu13 (or a system install). Nothing links libcudnn: the frontend loads it at run
# time (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING), and without it attention runs the fp32 kernel.
# AUTO builds it when both headers are found, ON insists (tools/gpu/package.sh), OFF skips.
set(FARTHING_CUDNN AUTO CACHE STRING "Build cuDNN attention: AUTO (when its headers are found), ON or OFF")
set_property(CACHE FARTHING_CUDNN PROPERTY STRINGS AUTO ON OFF)
set(FARTHING_WITH_CUDNN OFF)
if(FARTHING_WITH_CUDA AND NOT FARTHING_CUDNN STREQUAL "OFF")
  set(farthing_python_roots)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c
                            "import site, sysconfig; print(';'.join([sysconfig.get_paths()['purelib']] + site.getsitepackages()))"
                    OUTPUT_VARIABLE farthing_python_roots OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
  set(farthing_frontend_hints)
  set(farthing_cudnn_hints)
  foreach(root IN LISTS farthing_python_roots)
    list(APPEND farthing_frontend_hints "${root}/include")
    list(APPEND farthing_cudnn_hints "${root}/nvidia/cudnn/include" "${root}/nvidia/cu13/include")
  endforeach()
  find_path(FARTHING_CUDNN_FRONTEND_INCLUDE cudnn_frontend.h HINTS ${farthing_frontend_hints} NO_CACHE)
  find_path(FARTHING_CUDNN_INCLUDE cudnn_graph.h HINTS ${farthing_cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS} NO_CACHE)
  if(FARTHING_CUDNN_FRONTEND_INCLUDE AND FARTHING_CUDNN_INCLUDE)
    set(FARTHING_WITH_CUDNN ON)
    message(STATUS "farthing: cuDNN attention ON (frontend ${FARTHING_CUDNN_FRONTEND_INCLUDE}, cuDNN ${FARTHING_CUDNN_INCLUDE})")
  elseif(FARTHING_CUDNN STREQUAL "ON")
    message(FATAL_ERROR "FARTHING_CUDNN=ON but cuDNN's headers were not found (cudnn_frontend.h: "
                        "'${FARTHING_CUDNN_FRONTEND_INCLUDE}', cudnn_graph.h: '${FARTHING_CUDNN_INCLUDE}'): "
                        "pip install nvidia-cudnn-frontend nvidia-cudnn-cu13")
  else()
    message(STATUS "farthing: cuDNN attention OFF (headers not found: pip install nvidia-cudnn-frontend "
                   "nvidia-cudnn-cu13); CUDA attention runs the fp32 kernel")
  endif()
endif()
