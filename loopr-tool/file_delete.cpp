// placeholder: replaced by the implementation
#include "loopr-tool/tools.hpp"

namespace loopr::tool {
Result<Json> file_delete(const Worktree&, const Json&) {
  return make_error(errc::internal, "file_delete is not built yet");
}
}  // namespace loopr::tool
