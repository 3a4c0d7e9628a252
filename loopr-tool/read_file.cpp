// placeholder: replaced by the implementation
#include "loopr-tool/tools.hpp"

namespace loopr::tool {
Result<Json> read_file(const Worktree&, const Json&) {
  return make_error(errc::internal, "read_file is not built yet");
}
}  // namespace loopr::tool
