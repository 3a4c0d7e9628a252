// parse_proxy_request: the heads an HTTP proxy client sends, and the ones
// the egress proxy refuses with a message saying what to send instead.
#include "egress/proxy_request.hpp"

#include <gtest/gtest.h>

namespace loopr::egress {
namespace {

TEST(ProxyRequest, ConnectNamesTheTunnelsTargetAndTheTokenFromBasicCredentials) {
  // "loopr:abc123" in base64
  const auto request = parse_proxy_request(
      "CONNECT github.com:443 HTTP/1.1\r\nHost: github.com:443\r\n"
      "Proxy-Authorization: Basic bG9vcHI6YWJjMTIz\r\n\r\n");
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_TRUE(request->tunnel);
  EXPECT_EQ(request->host, "github.com");
  EXPECT_EQ(request->port, 443);
  EXPECT_EQ(request->token, "abc123");
  EXPECT_EQ(request->forward_head, "");
  const auto ipv6 = parse_proxy_request("CONNECT [::1]:22 HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(ipv6);
  EXPECT_EQ(ipv6->host, "::1");
  EXPECT_EQ(ipv6->port, 22);
  EXPECT_EQ(ipv6->token, "");
}

TEST(ProxyRequest, PlainHttpIsForwardedInOriginFormWithoutTheProxysHeaders) {
  const auto request = parse_proxy_request(
      "GET http://Example.com:8080/a/b?c=d#frag HTTP/1.1\r\nHost: Example.com:8080\r\n"
      "Proxy-Authorization: Basic bG9vcHI6dA==\r\nProxy-Connection: keep-alive\r\n"
      "Connection: keep-alive\r\nAccept: */*\r\n\r\n");
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_FALSE(request->tunnel);
  EXPECT_EQ(request->host, "Example.com");
  EXPECT_EQ(request->port, 8080);
  EXPECT_EQ(request->token, "t");
  EXPECT_EQ(request->forward_head,
            "GET /a/b?c=d HTTP/1.1\r\nHost: Example.com:8080\r\nAccept: */*\r\n"
            "Connection: close\r\n\r\n");
  const auto bare = parse_proxy_request("HEAD http://10.0.0.1 HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->port, 80);
  EXPECT_EQ(bare->forward_head, "HEAD / HTTP/1.0\r\nHost: 10.0.0.1\r\nConnection: close\r\n\r\n");
}

TEST(ProxyRequest, WhatIsNotAProxyRequestIsRefusedWithWhatToSendInstead) {
  const struct {
    std::string head;
    const char* says;
  } cases[] = {
      {"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "not an absolute http:// URL"},
      {"GET https://x/ HTTP/1.1\r\n\r\n", "go through CONNECT"},
      {"CONNECT example.com HTTP/1.1\r\n\r\n", "CONNECT needs host:port"},
      {"CONNECT example.com:0 HTTP/1.1\r\n\r\n", "is not a port"},
      {"CONNECT example.com:65536 HTTP/1.1\r\n\r\n", "is not a port"},
      {"CONNECT ::1:22 HTTP/1.1\r\n\r\n", "must be in brackets"},
      {"GET http://user@example.com/ HTTP/1.1\r\n\r\n", "user names"},
      {"GET http://exa mple.com/ HTTP/1.1\r\n\r\n", "spaces or control characters"},
      {"GET http://example.com/ HTTP/2\r\n\r\n", "HTTP/1.0 or HTTP/1.1"},
      {"get http://example.com/ HTTP/1.1\r\n\r\n", "not a method"},
      {"GET http://example.com/ HTTP/1.1\r\nno colon here\r\n\r\n", "not a header field"},
      {"GET http://example.com/ HTTP/1.1\r\n", "blank line"},
      {"GET http://ex\x01mple.com/ HTTP/1.1\r\n\r\n", "control characters"},
      // Found by fuzz_proxy_request: a bare LF or NUL inside a field would
      // have been forwarded, smuggling a header past the proxy.
      {"GET http://a/ HTTP/1.1\r\nX-A: 1\nProxy-Authorization: x\r\n\r\n", "cannot have"},
      {std::string("GET http://a/ HTTP/1.1\r\nX-A: 1\r\0B: 2\r\n\r\n", 40), "cannot have"},
      {"GET http://a/ HTTP/1.1\r\nBad Name: 1\r\n\r\n", "cannot have"},
      {"GET http://a/ b HTTP/1.1\r\n\r\n", "spaces or control characters"},
  };
  for (const auto& c : cases) {
    const auto request = parse_proxy_request(c.head);
    ASSERT_FALSE(request) << c.head;
    EXPECT_EQ(request.error().code, errc::invalid_arguments);
    EXPECT_NE(request.error().message.find(c.says), std::string::npos)
        << c.head << " -> " << request.error().message;
    EXPECT_NE(request.error().hint.find("HTTPS_PROXY"), std::string::npos);
  }
}

TEST(ProxyRequest, BadCredentialsGiveNoTokenRatherThanAnError) {
  for (const char* credentials : {"Basic !!!!", "Bearer abc", "Basic bm9jb2xvbg==", "Basic"}) {
    const auto request = parse_proxy_request(std::string("CONNECT h:1 HTTP/1.1\r\n") +
                                             "Proxy-Authorization: " + credentials + "\r\n\r\n");
    ASSERT_TRUE(request) << credentials;
    EXPECT_EQ(request->token, "") << credentials;
  }
}

}  // namespace
}  // namespace loopr::egress
