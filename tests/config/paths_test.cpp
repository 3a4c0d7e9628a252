#include "config/paths.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"
#include "config/settings.hpp"

namespace loopr::config {
namespace {

constexpr std::uint32_t kUid = 1234;

TEST(Paths, FallBackToHome) {
  const Paths p = resolve_paths({}, fixed_env({{"HOME", "/home/ada"}}), kUid);
  EXPECT_EQ(p.config_dir, "/home/ada/.config/loopr");
  EXPECT_EQ(p.state_dir, "/home/ada/.local/state/loopr");
  EXPECT_EQ(p.socket_path, "/tmp/loopr-1234/looprd.sock");
  EXPECT_EQ(p.settings_file(), "/home/ada/.config/loopr/loopr.toml");
  EXPECT_EQ(p.user_catalog_file(), "/home/ada/.config/loopr/catalog.toml");
}

TEST(Paths, XdgVariablesBeatHome) {
  const Paths p = resolve_paths({},
                                fixed_env({{"HOME", "/home/ada"},
                                           {"XDG_CONFIG_HOME", "/xdg/config"},
                                           {"XDG_STATE_HOME", "/xdg/state/"},
                                           {"XDG_RUNTIME_DIR", "/run/user/1234"}}),
                                kUid);
  EXPECT_EQ(p.config_dir, "/xdg/config/loopr");
  EXPECT_EQ(p.state_dir, "/xdg/state/loopr");
  EXPECT_EQ(p.socket_path, "/run/user/1234/loopr/looprd.sock");
}

TEST(Paths, EmptyOrRelativeXdgVariablesAreIgnored) {
  const Paths p = resolve_paths({},
                                fixed_env({{"HOME", "/h"},
                                           {"XDG_CONFIG_HOME", ""},
                                           {"XDG_STATE_HOME", "rel/state"},
                                           {"XDG_RUNTIME_DIR", ""}}),
                                kUid);
  EXPECT_EQ(p.config_dir, "/h/.config/loopr");
  EXPECT_EQ(p.state_dir, "/h/.local/state/loopr");
  EXPECT_EQ(p.socket_path, "/tmp/loopr-1234/looprd.sock");
}

TEST(Paths, LooprVariablesBeatXdgAndFlagsBeatEverything) {
  const auto env = fixed_env({{"HOME", "/h"},
                              {"XDG_CONFIG_HOME", "/xdg/config"},
                              {"XDG_RUNTIME_DIR", "/run/user/1"},
                              {"LOOPR_CONFIG_DIR", "/env/config"},
                              {"LOOPR_STATE_DIR", "/env/state"},
                              {"LOOPR_SOCKET", "/env/s.sock"}});
  const Paths from_env = resolve_paths({}, env, kUid);
  EXPECT_EQ(from_env.config_dir, "/env/config");
  EXPECT_EQ(from_env.state_dir, "/env/state");
  EXPECT_EQ(from_env.socket_path, "/env/s.sock");
  const Paths from_flags = resolve_paths({"/f/config", "/f/state", "/f/s.sock"}, env, kUid);
  EXPECT_EQ(from_flags.config_dir, "/f/config");
  EXPECT_EQ(from_flags.state_dir, "/f/state");
  EXPECT_EQ(from_flags.socket_path, "/f/s.sock");
}

TEST(Paths, SettingsSitBetweenLooprVariablesAndXdg) {
  DaemonSettings configured;
  configured.state_dir = "/conf/state";
  configured.socket_path = "/conf/d.sock";
  const Paths p = resolve_paths({}, fixed_env({{"HOME", "/h"}, {"XDG_STATE_HOME", "/xdg/state"}}),
                                kUid, &configured);
  EXPECT_EQ(p.state_dir, "/conf/state");
  EXPECT_EQ(p.socket_path, "/conf/d.sock");
  const Paths env_wins = resolve_paths(
      {}, fixed_env({{"HOME", "/h"}, {"LOOPR_STATE_DIR", "/env/state"}}), kUid, &configured);
  EXPECT_EQ(env_wins.state_dir, "/env/state");
}

TEST(Paths, NoHomeAndNoOverrideIsAStartupError) {
  EXPECT_THROW(resolve_paths({}, fixed_env({}), kUid), StartupError);
  const Paths p = resolve_paths({"/c", "/s", ""}, fixed_env({}), kUid);
  EXPECT_EQ(p.socket_path, "/tmp/loopr-1234/looprd.sock");
}

TEST(Paths, OverlongSocketPathIsAStartupError) {
  const std::string deep = "/" + std::string(120, 'x') + "/looprd.sock";
  EXPECT_THROW(resolve_paths({"/c", "/s", deep}, fixed_env({}), kUid), StartupError);
}

TEST(Paths, UserAndRepositoryCatalogFiles) {
  const Paths p = resolve_paths({}, fixed_env({{"HOME", "/home/ada"}}), kUid);
  EXPECT_EQ(p.user_catalog_file(), "/home/ada/.config/loopr/catalog.toml");
  EXPECT_EQ(repository_catalog_file("/src/proj"), "/src/proj/.loopr/catalog.toml");
  EXPECT_EQ(repository_catalog_file("/src/proj/"), "/src/proj/.loopr/catalog.toml");
  EXPECT_EQ(repository_catalog_file(""), "");
}

TEST(Environment, ExpandHome) {
  const auto env = fixed_env({{"HOME", "/home/ada"}});
  EXPECT_EQ(expand_home("~", env), "/home/ada");
  EXPECT_EQ(expand_home("~/a/b", env), "/home/ada/a/b");
  EXPECT_EQ(expand_home("/abs", env), "/abs");
  EXPECT_EQ(expand_home("~bob/x", env), "~bob/x");
  EXPECT_EQ(expand_home("~/x", fixed_env({})), std::nullopt);
}

}  // namespace
}  // namespace loopr::config
