# hip-lang-config.cmake shim for Debian's HIP packages, used by cmake/HipDebian.cmake only.
#
# CMake's enable_language(HIP) loads <ROCm root>/lib/cmake/hip-lang/hip-lang-config.cmake for the runtime
# targets. Debian ships one at /usr/lib/<arch>/cmake/hip-lang, but it adds -isystem /usr/include to every HIP
# compile, which breaks <cmath>; this shim defines the same targets without it: hip-lang::amdhip64 (the runtime
# library), hip-lang::host (links it, defines the AMD platform) and hip-lang::device (what CMake links into HIP
# targets).
if(NOT TARGET hip-lang::device)
  # also loaded inside CMake's try_compile projects, where CMAKE_LIBRARY_ARCHITECTURE may be unset
  file(GLOB _amdhip64_dirs /usr/lib/*/libamdhip64.so)
  list(TRANSFORM _amdhip64_dirs REPLACE "/libamdhip64.so$" "")
  find_library(SPMVPORT_AMDHIP64_LIBRARY amdhip64 PATHS ${_amdhip64_dirs} /usr/lib NO_DEFAULT_PATH)
  if(NOT SPMVPORT_AMDHIP64_LIBRARY)
    message(FATAL_ERROR "hip-lang shim: libamdhip64.so not found (apt-get install libamdhip64-dev)")
  endif()
  add_library(hip-lang::amdhip64 SHARED IMPORTED)
  set_target_properties(hip-lang::amdhip64 PROPERTIES IMPORTED_LOCATION "${SPMVPORT_AMDHIP64_LIBRARY}")
  add_library(hip-lang::host INTERFACE IMPORTED)
  set_target_properties(hip-lang::host PROPERTIES
    INTERFACE_LINK_LIBRARIES hip-lang::amdhip64
    INTERFACE_COMPILE_DEFINITIONS "__HIP_PLATFORM_AMD__=1;__HIP_PLATFORM_HCC__=1")
  add_library(hip-lang::device INTERFACE IMPORTED)
  set_target_properties(hip-lang::device PROPERTIES
    INTERFACE_LINK_LIBRARIES hip-lang::host
    INTERFACE_COMPILE_DEFINITIONS "$<$<COMPILE_LANGUAGE:HIP>:__HIP_ROCclr__=1>")
endif()
set(_CMAKE_HIP_DEVICE_RUNTIME_TARGET "hip-lang::device")
