// placeholder: replaced by the implementation
#include "loopr-tool/tools.hpp"

namespace loopr::tool {
Result<Json> list_directory(const Worktree&, const Json&) {
  return make_error(errc::internal, "list_directory is not built yet");
}
}  // namespace loopr::tool
