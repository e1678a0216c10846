# Compiler warnings for rlock's own targets. RLOCK_WERROR (on in CI) turns them into errors.
function(rlock_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                         -Wold-style-cast -Wcast-align -Woverloaded-virtual
                         -Wimplicit-fallthrough)
  if(RLOCK_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
