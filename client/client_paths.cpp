#include "client/client_paths.hpp"

#include <exception>
#include <filesystem>
#include <ostream>

#include "client/failure.hpp"
#include "common/error.hpp"
#include "config/settings.hpp"

namespace loopr::client {

config::Paths resolve_client_paths(const config::PathFlags& flags, std::ostream& err) {
  const config::Paths first = config::resolve_paths(flags);
  try {
    const config::Settings settings = config::Settings::load(first.settings_file());
    return config::resolve_paths(flags, &settings.daemon);
  } catch (const StartupError&) {
    throw;
  } catch (const std::exception& e) {
    err << "looprctl: warning: ignoring " << first.settings_file() << ": " << e.what() << '\n';
    return first;
  }
}

Result<std::string> absolute_folder(const std::string& given, std::string_view what,
                                    std::string_view flag) {
  std::error_code error;
  const std::filesystem::path path = given.empty() ? std::filesystem::current_path(error)
                                                   : std::filesystem::absolute(given, error);
  if (error) {
    return make_error(failure::usage,
                      "cannot make " + std::string(what) + " '" + given +
                          "' an absolute path: " + error.message(),
                      "pass " + std::string(flag) + " with an absolute path");
  }
  std::string normal = path.lexically_normal().string();
  if (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return normal;
}

}  // namespace loopr::client
