# RLOCK_SANITIZE=address,undefined or thread: applies to every target of the build.
if(RLOCK_SANITIZE)
  add_compile_options(-fsanitize=${RLOCK_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${RLOCK_SANITIZE})
endif()
