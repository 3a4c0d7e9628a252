// placeholder: replaced by the implementation
#include "loopr-tool/tools.hpp"

namespace loopr::tool {
Result<Json> glob(const Worktree&, const Json&) {
  return make_error(errc::internal, "glob is not built yet");
}
}  // namespace loopr::tool
