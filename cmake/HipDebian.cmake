# HipDebian.cmake -- enable the HIP language with Debian's HIP packages (hipcc, libamdhip64-dev,
# rocm-device-libs; ROCm 5.2 driving clang 15), and change nothing when a real ROCm is installed.
#
#   include(HipDebian)
#   spmvport_hip_prepare(found)      # sets `found` TRUE when enable_language(HIP) can follow
#   enable_language(HIP)
#
# What CMake 3.25 needs on Debian, and why (../shared/docs/toolchain.md has the measurements):
#   - the compiler is clang++-15: /usr/bin/clang++ is clang 14, too old for HIP 5.2; hipcc is refused by CMake;
#   - HIP flags --rocm-path=/usr --hip-device-lib-path=<amdgcn bitcode> --hip-version=<from hip_version.h>:
#     clang does not find Debian's layout by itself;
#   - a ROCm root holding lib/cmake/hip-lang/hip-lang-config.cmake: cmake/hip-debian-root is that root, with a
#     shim that defines the runtime targets without Debian's -isystem /usr/include (which breaks <cmath>);
#   - check_language(HIP) cannot detect any of this: the test is /usr/include/hip/hip_runtime.h.
# A real ROCm (/opt/rocm or $ROCM_PATH with lib/cmake/hip-lang) or a CMAKE_HIP_COMPILER given by the user
# takes the normal path: check_language(HIP) and nothing else.
set(_spmvport_hip_debian_dir ${CMAKE_CURRENT_LIST_DIR})

macro(spmvport_hip_prepare out)
  set(${out} FALSE)
  set(_rocm "/opt/rocm")
  if(DEFINED ENV{ROCM_PATH})
    set(_rocm "$ENV{ROCM_PATH}")
  endif()
  if(CMAKE_HIP_COMPILER OR EXISTS "${_rocm}/lib/cmake/hip-lang/hip-lang-config.cmake")
    include(CheckLanguage)
    check_language(HIP)
    if(CMAKE_HIP_COMPILER)
      set(${out} TRUE)
    endif()
  elseif(EXISTS /usr/include/hip/hip_runtime.h AND EXISTS /usr/include/hip/hip_version.h)
    find_program(SPMVPORT_HIP_CLANG NAMES clang++-15 clang++-16 clang++-17
                 DOC "clang with HIP support for Debian's HIP packages")
    find_path(SPMVPORT_HIP_DEVICE_LIBS ocml.bc
              PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/amdgcn/bitcode /usr/lib/amdgcn/bitcode
                    /usr/share/amdgcn/bitcode NO_DEFAULT_PATH DOC "AMD device libraries (rocm-device-libs)")
    file(STRINGS /usr/include/hip/hip_version.h _hipv REGEX "^#define HIP_VERSION_(MAJOR|MINOR|PATCH) ")
    string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3" _hipv "${_hipv}")
    if(SPMVPORT_HIP_CLANG AND SPMVPORT_HIP_DEVICE_LIBS AND _hipv MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+$")
      set(CMAKE_HIP_COMPILER "${SPMVPORT_HIP_CLANG}" CACHE FILEPATH "HIP compiler (Debian: clang++-15)")
      set(CMAKE_HIP_COMPILER_ROCM_ROOT "${_spmvport_hip_debian_dir}/hip-debian-root"
          CACHE PATH "ROCm root CMake reads hip-lang from (Debian: libspmvport's shim)")
      set(CMAKE_HIP_FLAGS_INIT
          "--rocm-path=/usr --hip-device-lib-path=${SPMVPORT_HIP_DEVICE_LIBS} --hip-version=${_hipv}")
      message(STATUS "libspmvport: Debian HIP ${_hipv} with ${SPMVPORT_HIP_CLANG}")
      set(${out} TRUE)
    else()
      message(STATUS "libspmvport: HIP headers found but not clang++-15 or the device libraries "
                     "(apt-get install hipcc libamdhip64-dev rocm-device-libs)")
    endif()
  endif()
endmacro()
