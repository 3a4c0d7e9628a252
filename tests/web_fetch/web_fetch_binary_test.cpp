// loopr-fetch web_fetch as a process, against local HTTP servers: what it
// returns for a page, and every SSRF route of SECURITY.md class 14 refused
// before a connection is made (the servers count what they accept).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "tests/support/http_test_server.hpp"
#include "tests/support/temp_tree.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;

class WebFetchBinary : public ::testing::Test {
 protected:
  ToolRun fetch(const json& args) {
    return run_tool_binary("loopr-fetch", "web_fetch", tree_.root(), args.dump());
  }

  // Asserts a refusal by the address policy that names why.
  void expect_refused(const std::string& url, const std::string& why, const json& extra = {}) {
    json args = {{"url", url}};
    if (!extra.is_null()) args.update(extra);
    const ToolRun run = fetch(args);
    EXPECT_EQ(run.exit_code, 1) << url << ": " << run.stdout_text;
    EXPECT_EQ(run.output["error"]["code"], "sandbox_denied") << url << ": " << run.stdout_text;
    const std::string message = run.output["error"].value("message", "");
    EXPECT_NE(message.find(why), std::string::npos) << url << ": " << message;
  }

  TempTree tree_;
};

TEST_F(WebFetchBinary, APageComesBackAsMarkdownTextOrHtml) {
  HttpTestServer server;
  server.route("/page", {200, "text/html; charset=utf-8",
                         "<html><head><title>T</title></head><body><h1>Hello</h1>"
                         "<p>See <a href=\"/other\">other</a>.</p></body></html>",
                         ""});
  const json allow = {"127.0.0.1/32"};
  const ToolRun md = fetch({{"url", server.base_url() + "/page"}, {"allowed_networks", allow}});
  ASSERT_EQ(md.exit_code, 0) << md.stdout_text;
  EXPECT_EQ(md.output["status"], 200);
  EXPECT_EQ(md.output["format"], "markdown");
  EXPECT_EQ(md.output["title"], "T");
  EXPECT_EQ(md.output["content_type"], "text/html");
  EXPECT_EQ(md.output["content"], "# Hello\n\nSee [other](" + server.base_url() + "/other).");
  EXPECT_EQ(md.output["truncated"], false);

  const ToolRun text = fetch(
      {{"url", server.base_url() + "/page"}, {"format", "text"}, {"allowed_networks", allow}});
  EXPECT_EQ(text.output["content"], "Hello\n\nSee other.");
  const ToolRun html = fetch(
      {{"url", server.base_url() + "/page"}, {"format", "html"}, {"allowed_networks", allow}});
  EXPECT_NE(html.output["content"].get<std::string>().find("<h1>Hello</h1>"), std::string::npos);
}

TEST_F(WebFetchBinary, PlainTextAndJsonAreReturnedAsTheyAre) {
  HttpTestServer server;
  server.route("/data.json", {200, "application/json", "{\"a\": [1, 2]}", ""});
  server.route("/latin1.txt", {200, "text/plain; charset=iso-8859-1", "caf\xE9", ""});
  const json allow = {"127.0.0.0/8"};
  const ToolRun data =
      fetch({{"url", server.base_url() + "/data.json"}, {"allowed_networks", allow}});
  ASSERT_EQ(data.exit_code, 0) << data.stdout_text;
  EXPECT_EQ(data.output["content"], "{\"a\": [1, 2]}");
  EXPECT_EQ(data.output["format"], "text");
  const ToolRun latin =
      fetch({{"url", server.base_url() + "/latin1.txt"}, {"allowed_networks", allow}});
  EXPECT_EQ(latin.output["content"], "caf\xC3\xA9");
}

TEST_F(WebFetchBinary, BinaryContentAndHttpErrorsAreToolErrors) {
  HttpTestServer server;
  server.route("/logo.png", {200, "image/png", std::string("\x89PNG\r\n\x1a\n\0\0", 10), ""});
  server.route("/broken", {500, "text/html", "<p>database down</p>", ""});
  const json allow = {"127.0.0.1"};
  const ToolRun image =
      fetch({{"url", server.base_url() + "/logo.png"}, {"allowed_networks", allow}});
  EXPECT_EQ(image.exit_code, 1);
  EXPECT_EQ(image.output["error"]["code"], "binary_file") << image.stdout_text;
  const ToolRun missing =
      fetch({{"url", server.base_url() + "/nothing"}, {"allowed_networks", allow}});
  EXPECT_EQ(missing.output["error"]["code"], "http_error") << missing.stdout_text;
  EXPECT_EQ(missing.output["error"]["details"]["status"], 404);
  const ToolRun broken =
      fetch({{"url", server.base_url() + "/broken"}, {"allowed_networks", allow}});
  EXPECT_EQ(broken.output["error"]["code"], "http_error");
  EXPECT_NE(broken.output["error"]["message"].get<std::string>().find("database down"),
            std::string::npos);
}

TEST_F(WebFetchBinary, ALongPageIsCutToTheOutputCapAndSaysSo) {
  HttpTestServer server;
  std::string body = "<pre>";
  for (int i = 0; i < 20000; ++i)
    body += "line \"" + std::to_string(i) + "\"\t\\\n";
  body += "</pre>";
  server.route("/long", {200, "text/html", body, ""});
  ::setenv("LOOPR_MAX_OUTPUT_BYTES", "20000", 1);
  const ToolRun run =
      fetch({{"url", server.base_url() + "/long"}, {"allowed_networks", {"127.0.0.1"}}});
  ::unsetenv("LOOPR_MAX_OUTPUT_BYTES");
  ASSERT_EQ(run.exit_code, 0) << run.stdout_text.substr(0, 300);
  EXPECT_LE(run.stdout_text.size(), 20000u);
  EXPECT_EQ(run.output["truncated"], true);
  const std::string content = run.output["content"];
  EXPECT_TRUE(content.starts_with("```\nline \"0\"")) << content.substr(0, 40);
  EXPECT_NE(content.find("[content truncated: "), std::string::npos);
}

// SECURITY.md class 14: loopback, private, link-local and metadata targets,
// in every spelling, are refused before any connection.
TEST_F(WebFetchBinary, LoopbackInEverySpellingIsRefusedBeforeConnecting) {
  HttpTestServer server;
  server.route("/", {200, "text/plain", "secret", ""});
  const std::string port = std::to_string(server.port());
  for (const std::string host : {"127.0.0.1", "localhost", "[::ffff:127.0.0.1]", "2130706433",
                                 "0x7f000001", "0177.0.0.1", "127.1", "[::ffff:7f00:1]"}) {
    expect_refused("http://" + host + ":" + port + "/", "loopback");
  }
  expect_refused("http://0.0.0.0:" + port + "/", "this network");
  expect_refused("http://[::1]:" + port + "/", "loopback");
  expect_refused("http://[64:ff9b::7f00:1]:" + port + "/", "loopback");
  EXPECT_EQ(server.connections(), 0);
}

TEST_F(WebFetchBinary, MetadataPrivateAndLinkLocalTargetsAreRefused) {
  expect_refused("http://169.254.169.254/latest/meta-data/", "link-local");
  expect_refused("http://[fe80::1]/", "link-local");
  expect_refused("http://10.0.0.1/", "RFC 1918");
  expect_refused("http://172.16.5.4:8080/", "RFC 1918");
  expect_refused("https://192.168.1.1/admin", "RFC 1918");
  expect_refused("http://100.64.0.1/", "carrier-grade NAT");
  expect_refused("http://[fd00::1]/", "unique local");
  // An allowance for one range does not open the others.
  expect_refused("http://169.254.169.254/", "link-local", {{"allowed_networks", {"10.0.0.0/8"}}});
}

TEST_F(WebFetchBinary, ARedirectToARefusedAddressIsRefused) {
  HttpTestServer allowed;  // 127.0.0.1, allowed below
  HttpTestServer inner("127.0.0.2");
  inner.route("/secret", {200, "text/plain", "secret", ""});
  allowed.route("/hop", {302, "text/plain", "", inner.base_url() + "/secret"});
  allowed.route("/to-metadata", {301, "text/plain", "", "http://169.254.169.254/latest/"});
  allowed.route("/to-file", {302, "text/plain", "", "file:///etc/passwd"});
  const json allow = {{"allowed_networks", {"127.0.0.1/32"}}};
  expect_refused(allowed.base_url() + "/hop", "127.0.0.2", allow);
  expect_refused(allowed.base_url() + "/to-metadata", "link-local", allow);
  EXPECT_EQ(inner.connections(), 0);

  const ToolRun to_file =
      fetch({{"url", allowed.base_url() + "/to-file"}, {"allowed_networks", {"127.0.0.1/32"}}});
  EXPECT_EQ(to_file.output["error"]["code"], "invalid_arguments") << to_file.stdout_text;
  EXPECT_NE(to_file.output["error"]["message"].get<std::string>().find("redirected to"),
            std::string::npos);
}

TEST_F(WebFetchBinary, RedirectsAreFollowedAFewTimesOnly) {
  HttpTestServer server;
  server.route("/a", {301, "text/plain", "", "/b"});
  server.route("/b", {200, "text/plain", "arrived", ""});
  server.route("/loop", {302, "text/plain", "", "/loop"});
  const json allow = {"127.0.0.1/32"};
  const ToolRun followed = fetch({{"url", server.base_url() + "/a"}, {"allowed_networks", allow}});
  ASSERT_EQ(followed.exit_code, 0) << followed.stdout_text;
  EXPECT_EQ(followed.output["content"], "arrived");
  EXPECT_EQ(followed.output["url"], server.base_url() + "/b");
  EXPECT_EQ(followed.output["redirects"], 1);
  const ToolRun looping =
      fetch({{"url", server.base_url() + "/loop"}, {"allowed_networks", allow}});
  EXPECT_EQ(looping.output["error"]["code"], "io") << looping.stdout_text;
  EXPECT_NE(looping.output["error"]["message"].get<std::string>().find("redirected more than 5"),
            std::string::npos);
}

TEST_F(WebFetchBinary, BadArgumentsAreRefusedWithWhatToSend) {
  const struct {
    json args;
    const char* mentions;
  } cases[] = {
      {json::object(), "url"},
      {{{"url", 5}}, "url"},
      {{{"url", "file:///etc/passwd"}}, "http"},
      {{{"url", "https://example.com"}, {"format", "pdf"}}, "format"},
      {{{"url", "https://example.com"}, {"method", "POST"}}, "method"},
      {{{"url", "https://example.com"}, {"allowed_networks", "10.0.0.0/8"}}, "allowed_networks"},
      {{{"url", "https://example.com"}, {"allowed_networks", {"10.0.0.1/8"}}}, "10.0.0.1/8"},
  };
  for (const auto& c : cases) {
    const ToolRun run = fetch(c.args);
    EXPECT_EQ(run.exit_code, 1) << c.args.dump();
    EXPECT_EQ(run.output["error"]["code"], "invalid_arguments") << c.args.dump() << run.stdout_text;
    EXPECT_NE(run.output["error"]["message"].get<std::string>().find(c.mentions), std::string::npos)
        << run.stdout_text;
  }
}

}  // namespace
}  // namespace loopr::test
