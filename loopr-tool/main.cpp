// loopr-tool <tool> --worktree DIR: the file, search and command tools
// (tool_main.hpp has the process contract); loopr-tool --serve: the same
// tools as a warm worker (serve.hpp).
#include "loopr-tool/serve.hpp"
#include "loopr-tool/tool_main.hpp"
#include "loopr-tool/tool_registry.hpp"

#if defined(__SANITIZE_ADDRESS__)
// In sanitizer builds: LeakSanitizer stops the world with ptrace at exit,
// which the job's seccomp filter denies, so leak checks are off for this
// binary (it runs inside the sandbox). Its code is leak-checked in-process
// by the unit tests, which link the same library.
extern "C" const char* __asan_default_options() {
  return "detect_leaks=0";
}
#endif

int main(int argc, char** argv) {
  return loopr::tool::tool_main(argc, argv, "loopr-tool", loopr::tool::all_tools(),
                                loopr::tool::serve_calls);
}
