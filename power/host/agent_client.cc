#include "power/host/agent_client.h"

#include "net/stream.h"

namespace wattdb::power {

namespace asio = net::asio;

Result<std::string> HostAgentRequest(const std::string& path, const std::string& req,
                                     int timeout_ms) {
  asio::io_context io;
  asio::local::stream_protocol::socket s(io);
  std::string reply;
  Status st = Status::TimedOut(
      fmt::format("the host agent at {} did not answer within {} ms", path, timeout_ms));
  s.async_connect(
      asio::local::stream_protocol::endpoint(path), [&](const boost::system::error_code& ec) {
        if (ec) {
          st = Status::Unavailable(fmt::format("no host agent at {}: {}", path, ec.message()));
          return;
        }
        auto line = std::make_shared<std::string>(req + "\n");
        asio::async_write(
            s, asio::buffer(*line), [&, line](const boost::system::error_code& we, size_t) {
              if (we) {
                st = Status::IOError(we.message());
                return;
              }
              asio::async_read_until(s, asio::dynamic_buffer(reply, 4096), '\n',
                                     [&](const boost::system::error_code& re, size_t n) {
                                       if (re) {
                                         st = Status::IOError(re.message());
                                         return;
                                       }
                                       reply.resize(n - 1);
                                       st = Status::OK();
                                     });
            });
      });
  io.run_for(std::chrono::milliseconds(timeout_ms));
  RETURN_NOT_OK(st);
  return reply;
}

}  // namespace wattdb::power
