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
