# RLOCK_SANITIZE=address,undefined or thread: applies to every target of the build.
# RLOCK_SANITIZER_SLOWDOWN: how much the build slows CPU-bound work, for the tests whose bounds
# include such work (tests/support/sanitizer_slowdown.hpp): the low end of ThreadSanitizer's
# documented 5x-15x slowdown; 1 for AddressSanitizer, whose runs meet the normal bounds.
set(RLOCK_SANITIZER_SLOWDOWN 1)
if(RLOCK_SANITIZE MATCHES "thread")
  set(RLOCK_SANITIZER_SLOWDOWN 5)
endif()
if(RLOCK_SANITIZE)
  add_compile_options(-fsanitize=${RLOCK_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${RLOCK_SANITIZE})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12's flow-based -Wmaybe-uninitialized reports false positives inside libstdc++
    # (<regex>, std::function) once sanitizer instrumentation is inlined; the normal build
    # keeps the warning.
    add_compile_options(-Wno-maybe-uninitialized)
    # Likewise -Wrestrict (GCC bug 105651): std::string assignments inlined with sanitizer
    # instrumentation are reported as overlapping memcpy of 2^63 bytes.
    add_compile_options(-Wno-restrict)
    if(RLOCK_SANITIZE MATCHES "thread")
      # GCC 12 warns (-Wtsan) that TSan does not model std::atomic_thread_fence, which Asio
      # uses; the report itself is what TSan checks, so the warning is not an error here.
      add_compile_options(-Wno-tsan)
    endif()
  endif()
endif()
