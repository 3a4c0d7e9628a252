#include "runner/job_environment.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace loopr::runner {
namespace {

bool has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

bool has_name(const std::vector<std::string>& env, const std::string& name) {
  return std::any_of(env.begin(), env.end(),
                     [&](const std::string& e) { return e.rfind(name + "=", 0) == 0; });
}

TEST(JobEnvironment, SecretsAndDaemonVariablesNeverReachAJob) {
  const auto env = job_environment({{"ANTHROPIC_API_KEY", "sk-secret"},
                                    {"OPENAI_API_KEY", "sk-other"},
                                    {"LOOPR_SOCKET", "/run/user/0/loopr/looprd.sock"},
                                    {"SSH_AUTH_SOCK", "/tmp/agent"},
                                    {"DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/bus"},
                                    {"LD_PRELOAD", "/tmp/evil.so"}},
                                   {.lane = "no-net", .max_output_bytes = 1000});
  for (const char* name : {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LOOPR_SOCKET", "SSH_AUTH_SOCK",
                           "DBUS_SESSION_BUS_ADDRESS", "LD_PRELOAD"}) {
    EXPECT_FALSE(has_name(env, name)) << name;
  }
}

TEST(JobEnvironment, AllowlistedValuesPassAndDefaultsAreSet) {
  const auto env =
      job_environment({{"CC", "clang"}, {"LANG", "de_DE.UTF-8"}}, {.lane = "heavy",
                                                                   .stream_output = true,
                                                                   .job_init = true,
                                                                   .max_output_bytes = 4096,
                                                                   .address_space_mb = 512});
  EXPECT_TRUE(has(env, "CC=clang"));
  EXPECT_TRUE(has(env, "LANG=de_DE.UTF-8"));
  EXPECT_TRUE(has(env, "HOME=/tmp"));
  EXPECT_TRUE(has(env, "PATH=/usr/local/bin:/usr/bin:/bin"));
  EXPECT_TRUE(has(env, "LOOPR_LANE=heavy"));
  EXPECT_TRUE(has(env, "LOOPR_MAX_OUTPUT_BYTES=4096"));
  EXPECT_TRUE(has(env, "LOOPR_NETWORK=off"));
  EXPECT_TRUE(has(env, "LOOPR_STREAM_OUTPUT=1"));
  EXPECT_TRUE(has(env, "LOOPR_JOB_INIT=1"));
  EXPECT_TRUE(has(env, "LOOPR_ADDRESS_SPACE_MB=512"));
}

TEST(JobEnvironment, ALaneThatDoesNotStreamSaysNothingAboutStreamingOrInit) {
  const auto env = job_environment({}, {.lane = "net", .network = true, .max_output_bytes = 4096});
  EXPECT_TRUE(has(env, "LOOPR_NETWORK=on"));
  EXPECT_FALSE(has_name(env, "LOOPR_STREAM_OUTPUT"));
  EXPECT_FALSE(has_name(env, "LOOPR_JOB_INIT"));
}

TEST(JobEnvironment, ALaneWithAnEgressProxyPointsEveryClientAtIt) {
  const std::string url = "http://loopr:t0k@127.0.0.1:3128";
  const auto env = job_environment(
      {{"HTTPS_PROXY", "http://evil:1"}, {"NO_PROXY", "*"}, {"GIT_SSH_COMMAND", "sh -c evil"}},
      {.lane = "net",
       .network = true,
       .max_output_bytes = 10,
       .proxy_url = url,
       .proxy_port = 3128});
  for (const char* name :
       {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
        "npm_config_proxy", "npm_config_https_proxy", "LOOPR_EGRESS_PROXY"}) {
    EXPECT_TRUE(has(env, std::string(name) + "=" + url)) << name;
  }
  EXPECT_TRUE(has(env, "NO_PROXY=localhost,127.0.0.1,::1"));
  EXPECT_TRUE(has(env, "no_proxy=localhost,127.0.0.1,::1"));
  EXPECT_TRUE(has(env,
                  "GIT_SSH_COMMAND=ssh -o ProxyCommand='nc -X connect -x 127.0.0.1:3128 %h "
                  "%p'"));
  // Without a proxy (no-net, or the sandbox off) none of them is set.
  const auto none = job_environment({}, {.lane = "no-net", .max_output_bytes = 10});
  for (const char* name : {"HTTP_PROXY", "https_proxy", "LOOPR_EGRESS_PROXY", "GIT_SSH_COMMAND"})
    EXPECT_FALSE(has_name(none, name)) << name;
}

TEST(JobEnvironment, TheRequestCannotOverrideTheRunnersOwnVariables) {
  const auto env = job_environment({{"LOOPR_LANE", "net"},
                                    {"LOOPR_NETWORK", "on"},
                                    {"LOOPR_STREAM_OUTPUT", "1"},
                                    {"LOOPR_JOB_INIT", "1"}},
                                   {.lane = "no-net", .max_output_bytes = 10});
  EXPECT_TRUE(has(env, "LOOPR_LANE=no-net"));
  EXPECT_FALSE(has(env, "LOOPR_LANE=net"));
  EXPECT_TRUE(has(env, "LOOPR_NETWORK=off"));
  EXPECT_FALSE(has_name(env, "LOOPR_STREAM_OUTPUT"));
  EXPECT_FALSE(has_name(env, "LOOPR_JOB_INIT"));
}

}  // namespace
}  // namespace loopr::runner
