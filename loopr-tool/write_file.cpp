// placeholder: replaced by the implementation
#include "loopr-tool/tools.hpp"

namespace loopr::tool {
Result<Json> write_file(const Worktree&, const Json&) {
  return make_error(errc::internal, "write_file is not built yet");
}
}  // namespace loopr::tool
