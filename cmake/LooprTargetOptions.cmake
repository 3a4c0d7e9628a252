# loopr_target_options(<target>): the project's per-target warnings.
# Warnings are per target, never global, so third-party headers included as
# SYSTEM do not trip -Werror.
function(loopr_target_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wconversion -Wsign-conversion
                                           -Wshadow -Wnon-virtual-dtor -Wimplicit-fallthrough)
  if(LOOPR_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
