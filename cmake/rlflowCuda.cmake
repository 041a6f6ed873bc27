# RLFLOW_ENABLE_CUDA=AUTO|ON|OFF. AUTO turns CUDA on when nvcc, cuBLAS and cuDNN are all
# found (by default under /usr/local/cuda) and leaves it off, quietly, otherwise.
set(RLFLOW_CUDA_FOUND FALSE)
if(NOT RLFLOW_ENABLE_CUDA STREQUAL "OFF")
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  find_path(RLFLOW_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  find_library(RLFLOW_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  if(CUDAToolkit_FOUND AND CUDAToolkit_NVCC_EXECUTABLE AND TARGET CUDA::cublas
     AND RLFLOW_CUDNN_INCLUDE_DIR AND RLFLOW_CUDNN_LIBRARY)
    include(CheckLanguage)
    if(NOT CMAKE_CUDA_COMPILER)
      set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}")
    endif()
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
      enable_language(CUDA)
      set(RLFLOW_CUDA_FOUND TRUE)
      add_library(rlflow_cudnn UNKNOWN IMPORTED)
      set_target_properties(rlflow_cudnn PROPERTIES IMPORTED_LOCATION "${RLFLOW_CUDNN_LIBRARY}"
                                                    INTERFACE_INCLUDE_DIRECTORIES "${RLFLOW_CUDNN_INCLUDE_DIR}")
    endif()
  endif()
  if(NOT RLFLOW_CUDA_FOUND)
    if(RLFLOW_ENABLE_CUDA STREQUAL "ON")
      message(FATAL_ERROR "RLFLOW_ENABLE_CUDA=ON but nvcc, cuBLAS or cuDNN was not found")
    endif()
    message(STATUS "rlflow: CUDA toolkit with cuDNN not found; CUDA backends are off")
  endif()
endif()

# .cu files compile as C++20 (set by hand: CMake before 3.26 has no CUDA_STANDARD 20 for
# nvcc), with the host compiler's warnings on. Warning 20015 (a constexpr __host__
# function called from a __host__ __device__ one) is silenced: merely including
# <Eigen/Core> under nvcc raises it 28 times, from Eigen/src/Core/arch/CUDA/Complex.h.
function(rlflow_cuda_flags target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20 -Xcompiler=-Wall,-Wextra,-Wshadow,-Wno-unused-parameter --diag-suppress=20015>)
endfunction()
