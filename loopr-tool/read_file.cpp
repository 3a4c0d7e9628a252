// placeholder: replaced by the implementation
#include "loopr-tool/tools.hpp"
namespace loopr::tool {
#define LOOPR_PLACEHOLDER(name)                                   \
  Result<Json> name(const Worktree&, const Json&) {               \
    return make_error(errc::internal, #name " is not built yet"); \
  }
LOOPR_PLACEHOLDER(read_file)
LOOPR_PLACEHOLDER(write_file) LOOPR_PLACEHOLDER(edit_file) LOOPR_PLACEHOLDER(file_delete)
    LOOPR_PLACEHOLDER(list_directory) LOOPR_PLACEHOLDER(glob) LOOPR_PLACEHOLDER(grep)
}  // namespace loopr::tool
