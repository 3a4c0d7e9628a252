// loopr-fetch <tool> --worktree DIR: the tools that reach the network over
// HTTP (web_fetch, web_search), with the process contract of loopr-tool
// (loopr-tool/tool_main.hpp). A separate binary because libcurl and libxml2
// come only as shared libraries with their dependencies, while loopr-tool is
// linked statically to start fast; the runner execs this one for them.
#include <array>

#include "loopr-fetch/web_fetch.hpp"
#include "loopr-fetch/web_search.hpp"
#include "loopr-tool/tool_main.hpp"

#if defined(__SANITIZE_ADDRESS__)
// As in loopr-tool: LeakSanitizer's ptrace is denied inside the sandbox; the
// code is leak-checked in-process by the unit tests.
extern "C" const char* __asan_default_options() {
  return "detect_leaks=0";
}
#endif

namespace {

constexpr std::array kFetchTools = {
    loopr::tool::ToolEntry{"web_fetch", &loopr::fetch::web_fetch},
    loopr::tool::ToolEntry{"web_search", &loopr::fetch::web_search},
};

}  // namespace

int main(int argc, char** argv) {
  return loopr::tool::tool_main(argc, argv, "loopr-fetch", kFetchTools);
}
