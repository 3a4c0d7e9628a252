// SECURITY.md classes 21 and 22: the net and heavy lanes reach the network
// only through looprd's egress proxy. Every job here runs in the real
// runner's sandbox; the harness serves the lane's egress listener with the
// real EgressProxy, as looprd does, with the policy each test sets. The
// host's listeners count the connections that reach them: an attack that
// failed leaves them at zero.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/runner/runner_harness.hpp"
#include "tests/support/http_test_server.hpp"
#include "tests/support/temp_tree.hpp"
#include "tests/support/text_checks.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;

const char* const kNetworkLanes[] = {"net", "heavy"};

std::string both(const json& result) {
  return result.value("stdout", "") + result.value("stderr", "");
}

// The host's first non-loopback IPv4 address, or empty.
std::string host_address() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return {};
  std::string found;
  for (ifaddrs* entry = list; entry != nullptr && found.empty(); entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
    if (ntohl(in->sin_addr.s_addr) >> 24 == 127) continue;
    char text[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    found = text;
  }
  ::freeifaddrs(list);
  return found;
}

// curl through the lane's proxy whatever NO_PROXY says (--noproxy '').
std::string via_proxy(const std::string& url, const std::string& flags = "") {
  return "curl -sS --max-time 20 --noproxy '' " + flags + " '" + url + "'";
}

TEST(Attack21Egress, ALaneWithNetworkHasOnlyLoopbackAndItsProxyVariables) {
  for (const char* lane : kNetworkLanes) {
    RunnerHarness runner(lane_options(lane));
    const json interfaces = runner.shell("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
    EXPECT_EQ(interfaces["stdout"], "lo\n") << lane;
    const json env = runner.shell("echo \"$HTTPS_PROXY|$http_proxy|$ALL_PROXY|$NO_PROXY\"");
    // The harness's jobs are numbered; the token names the job's call.
    EXPECT_EQ(env["stdout"],
              "http://loopr:token-job-2@127.0.0.1:3128|http://loopr:token-job-2@127.0.0.1:3128|"
              "http://loopr:token-job-2@127.0.0.1:3128|localhost,127.0.0.1,::1\n")
        << lane;
  }
}

TEST(Attack21Egress, TheHostsLoopbackIsRefusedThroughTheProxyAndUnreachableAroundIt) {
  HttpTestServer server;
  server.route("/", {200, "text/plain", "host secret", ""});
  const std::string port = std::to_string(server.port());
  for (const char* lane : kNetworkLanes) {
    RunnerHarness runner(lane_options(lane));
    // Through the proxy, by IP, by name, in IPv6, and as a CONNECT tunnel.
    const json by_ip = runner.shell(via_proxy("http://127.0.0.1:" + port + "/"));
    EXPECT_TRUE(contains(by_ip["stdout"], "loopr's egress proxy refused 127.0.0.1:" + port))
        << both(by_ip);
    EXPECT_TRUE(contains(by_ip["stdout"], "is loopback")) << both(by_ip);
    EXPECT_TRUE(contains(by_ip["stdout"], "\"127.0.0.1/32\" to [egress] allowed_networks"))
        << both(by_ip);
    const json by_name = runner.shell(via_proxy("http://localhost:" + port + "/"));
    EXPECT_TRUE(contains(by_name["stdout"], "which localhost resolves to")) << both(by_name);
    EXPECT_TRUE(contains(by_name["stdout"], "is loopback")) << both(by_name);
    const json ipv6 = runner.shell(via_proxy("http://[::1]:" + port + "/", "-g"));
    EXPECT_TRUE(contains(ipv6["stdout"], "::1 is loopback")) << both(ipv6);
    const json tunnel = runner.shell(via_proxy("https://127.0.0.1:" + port + "/"));
    EXPECT_NE(tunnel["exit_code"], 0);
    EXPECT_TRUE(contains(tunnel["stderr"], "403")) << both(tunnel);
    // Around the proxy: the lane's own loopback, where nothing listens.
    const json direct =
        runner.shell("curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:" + port + "/");
    EXPECT_EQ(direct["exit_code"], 7) << both(direct);  // couldn't connect
    const json raw = runner.shell("bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + port + "'");
    EXPECT_TRUE(contains(raw["stderr"], "Connection refused")) << both(raw);
    // How each refusal was recorded: the rule, and the call it came from.
    bool saw_loopback = false;
    for (const auto& connection : runner.connections()) {
      EXPECT_FALSE(connection.allowed) << connection.host;
      EXPECT_EQ(connection.lane, lane);
      EXPECT_EQ(connection.call_id.rfind("job-", 0), 0u) << connection.call_id;
      saw_loopback = saw_loopback || connection.rule == "loopback";
    }
    EXPECT_TRUE(saw_loopback);
    EXPECT_EQ(runner.connections().size(), 4u);
  }
  EXPECT_EQ(server.connections(), 0) << "a job reached the host's loopback listener";
}

TEST(Attack21Egress, MetadataAndPrivateAddressesAreRefusedThroughAndUnreachableAround) {
  const std::string host = host_address();
  for (const char* lane : kNetworkLanes) {
    RunnerHarness runner(lane_options(lane));
    const json metadata = runner.shell(via_proxy("http://169.254.169.254/latest/meta-data/"));
    EXPECT_TRUE(contains(metadata["stdout"], "169.254.169.254 is link-local")) << both(metadata);
    const json rfc1918 = runner.shell(via_proxy("http://10.0.0.1/"));
    EXPECT_TRUE(contains(rfc1918["stdout"], "10.0.0.1 is private")) << both(rfc1918);
    const json cgnat = runner.shell(via_proxy("http://100.64.0.1/"));
    EXPECT_TRUE(contains(cgnat["stdout"], "carrier-grade NAT")) << both(cgnat);
    if (!host.empty()) {
      // The host's own address: refused by its range, or, were it public,
      // at least never reached around the proxy (below).
      const json own = runner.shell(via_proxy("http://" + host + ":9/"));
      EXPECT_TRUE(contains(own["stdout"], "loopr's egress proxy")) << both(own);
    }
    // Around the proxy: no route at all, TCP or UDP, and no DNS.
    for (const std::string& target : {std::string("169.254.169.254/80"), std::string("10.0.0.1/80"),
                                      (host.empty() ? std::string("192.0.2.1") : host) + "/22"}) {
      const json tcp = runner.shell("bash -c 'exec 3<>/dev/tcp/" + target + "'");
      EXPECT_TRUE(contains(tcp["stderr"], "Network is unreachable")) << target << both(tcp);
      const json udp = runner.shell("bash -c 'echo x > /dev/udp/" + target + "'");
      EXPECT_TRUE(contains(udp["stderr"], "Network is unreachable")) << target << both(udp);
    }
    const json dns = runner.shell("getent hosts deb.debian.org");
    EXPECT_EQ(dns["exit_code"], 2) << both(dns);
    for (const auto& connection : runner.connections()) {
      EXPECT_FALSE(connection.allowed) << connection.host << " " << connection.rule;
    }
  }
}

TEST(Attack21Egress, ARedirectToTheHostsLoopbackIsRefusedAtItsHop) {
  HttpTestServer inner("127.0.0.2");
  inner.route("/secret", {200, "text/plain", "secret", ""});
  HttpTestServer outer;
  outer.route("/hop", {302, "text/plain", "", inner.base_url() + "/secret"});
  RunnerOptions options = lane_options("net");
  options.allowed_networks = {"127.0.0.1/32"};  // the first hop is allowed
  RunnerHarness runner(options);
  const json hop = runner.shell(via_proxy(outer.base_url() + "/hop", "-L"));
  EXPECT_TRUE(contains(hop["stdout"], "127.0.0.2 is loopback")) << both(hop);
  EXPECT_FALSE(contains(hop["stdout"], "secret\n")) << both(hop);
  EXPECT_EQ(outer.connections(), 1);
  EXPECT_EQ(inner.connections(), 0);
}

TEST(Attack21Egress, AnAllowedTargetIsReachedByNameAndTheDomainListsHoldAroundIt) {
  HttpTestServer server;
  server.route("/page", {200, "text/plain", "reached through the proxy\n", ""});
  const std::string port = std::to_string(server.port());
  RunnerOptions options = lane_options("net");
  options.allowed_networks = {"127.0.0.1/32"};  // test-only: a local listener stands in
  options.allow_domains = {"localhost"};
  options.deny_domains = {"*.denied.test"};
  RunnerHarness runner(options);
  // Allowed: by name, as plain http and through a CONNECT tunnel.
  const json plain = runner.shell(via_proxy("http://localhost:" + port + "/page"));
  EXPECT_EQ(plain["stdout"], "reached through the proxy\n") << both(plain);
  const json tunnel =
      runner.shell(via_proxy("http://localhost:" + port + "/page", "--proxytunnel"));
  EXPECT_EQ(tunnel["stdout"], "reached through the proxy\n") << both(tunnel);
  // Refused around it: the literal address is not a listed name, a denied
  // suffix, a name not listed.
  const json literal = runner.shell(via_proxy("http://127.0.0.1:" + port + "/page"));
  EXPECT_TRUE(contains(literal["stdout"], "not in [egress.lanes.net] allow_domains"))
      << both(literal);
  const json denied = runner.shell(via_proxy("http://api.denied.test/"));
  EXPECT_TRUE(contains(denied["stdout"],
                       "matches \"*.denied.test\" in [egress.lanes.net] "
                       "deny_domains"))
      << both(denied);
  const json unlisted = runner.shell(via_proxy("http://example.com/"));
  EXPECT_TRUE(contains(unlisted["stdout"], "allow_domains")) << both(unlisted);
  EXPECT_EQ(server.connections(), 2);

  const auto connections = runner.connections();
  ASSERT_EQ(connections.size(), 5u);
  EXPECT_TRUE(connections[0].allowed);
  EXPECT_EQ(connections[0].rule, "allowed");
  EXPECT_EQ(connections[0].address, "127.0.0.1");  // the address judged is the one connected to
  EXPECT_EQ(connections[0].host, "localhost");
  EXPECT_EQ(connections[0].call_id, "job-1");
  EXPECT_GT(connections[0].bytes_received, 0u);
  EXPECT_EQ(connections[2].rule, "allow_domains");
  EXPECT_EQ(connections[3].rule, "deny_domains");
  EXPECT_EQ(connections[4].rule, "allow_domains");
}

// 22. DNS rebinding: a name that resolves to an allowed address when looked
// up and to the host's loopback the next time. The proxy looks each
// connection's name up once and connects to the address it judged, so the
// rebound lookup is refused and the loopback server sees nothing.
TEST(Attack22DnsRebinding, ARebindingNameReachesOnlyTheAddressTheProxyJudged) {
  HttpTestServer allowed("127.0.0.2");  // stands for a public address
  allowed.route("/", {200, "text/plain", "the public page\n", ""});
  HttpTestServer loopback;  // the host's loopback service
  loopback.route("/", {200, "text/plain", "private\n", ""});
  auto lookups = std::make_shared<std::atomic<int>>(0);
  for (const char* lane : kNetworkLanes) {
    lookups->store(0);
    RunnerOptions options = lane_options(lane);
    options.allowed_networks = {"127.0.0.2/32"};
    options.resolve = [lookups](const std::string&) -> Result<std::vector<IpAddress>> {
      const char* answer = (*lookups)++ % 2 == 0 ? "127.0.0.2" : "127.0.0.1";
      return std::vector<IpAddress>{IpAddress::parse(answer).value()};
    };
    RunnerHarness runner(options);
    const json first =
        runner.shell(via_proxy("http://rebind.test:" + std::to_string(allowed.port()) + "/"));
    EXPECT_EQ(first["stdout"], "the public page\n") << both(first);
    const json rebound =
        runner.shell(via_proxy("http://rebind.test:" + std::to_string(loopback.port()) + "/"));
    EXPECT_TRUE(
        contains(rebound["stdout"], "127.0.0.1 (which rebind.test resolves to) is loopback"))
        << both(rebound);
    EXPECT_EQ(lookups->load(), 2) << lane;
    const auto connections = runner.connections();
    ASSERT_EQ(connections.size(), 2u);
    EXPECT_EQ(connections[0].address, "127.0.0.2");
    EXPECT_TRUE(connections[0].allowed);
    EXPECT_EQ(connections[1].rule, "loopback");
  }
  EXPECT_EQ(allowed.connections(), 2);
  EXPECT_EQ(loopback.connections(), 0) << "a rebinding name reached the host's loopback";
}

// A bare repository served over git's dumb HTTP protocol by the test server.
void serve_repository(HttpTestServer& server, TempTree& tree) {
  const std::string work = tree.path("origin");
  const std::string bare = tree.path("repo.git");
  const std::string script = "set -e; git init -q " + work + "; cd " + work +
                             "; echo 'cloned through the proxy' > README; git add README; "
                             "git -c user.name=t -c user.email=t@t commit -qm one; "
                             "git clone -q --bare " +
                             work + " " + bare + "; cd " + bare + "; git update-server-info";
  ASSERT_EQ(std::system(script.c_str()), 0);
  for (const auto& entry : std::filesystem::recursive_directory_iterator(bare)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream content;
    content << in.rdbuf();
    const std::string path = "/repo.git/" + std::filesystem::relative(entry.path(), bare).string();
    server.route(path, {200, "application/octet-stream", content.str(), ""});
  }
  // The smart-protocol probe gets the plain file: git falls back to dumb.
  std::ifstream refs(bare + "/info/refs");
  std::ostringstream content;
  content << refs.rdbuf();
  server.route("/repo.git/info/refs?service=git-upload-pack",
               {200, "text/plain", content.str(), ""});
}

TEST(Attack21Egress, GitClonesThroughTheProxyUnchanged) {
  HttpTestServer server;
  TempTree tree;
  serve_repository(server, tree);
  RunnerOptions options = lane_options("net");
  options.allowed_networks = {"127.0.0.1/32"};
  RunnerHarness runner(options);
  // git reads http_proxy itself; NO_PROXY would keep "localhost" direct.
  const json clone = runner.shell(
      "NO_PROXY= no_proxy= git clone -q http://localhost:" + std::to_string(server.port()) +
      "/repo.git /tmp/clone && cat /tmp/clone/README");
  EXPECT_EQ(clone["exit_code"], 0) << both(clone);
  EXPECT_EQ(clone["stdout"], "cloned through the proxy\n") << both(clone);
  EXPECT_GT(server.connections(), 2);
  for (const auto& connection : runner.connections())
    EXPECT_TRUE(connection.allowed) << connection.rule << ": " << connection.message;
}

}  // namespace
}  // namespace loopr::test
