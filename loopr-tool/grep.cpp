// placeholder: replaced by the implementation
#include "loopr-tool/tools.hpp"

namespace loopr::tool {
Result<Json> grep(const Worktree&, const Json&) {
  return make_error(errc::internal, "grep is not built yet");
}
}  // namespace loopr::tool
