#include "master/metrics/metrics_server.h"

#include <fcntl.h>

#include <map>
#include <utility>  // before asio: Boost 1.74 + C++20 needs std::exchange declared

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "common/logging.h"
#include "master/cluster/cluster.h"
#include "rpc/exchange.h"

namespace wattdb::master {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

constexpr auto kIoDeadline = std::chrono::seconds(10);

std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

class Writer {
 public:
  void Family(const char* name, const char* type, const char* help) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void Sample(const char* name, const std::map<std::string, std::string>& labels, double v) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      bool first = true;
      for (const auto& [k, val] : labels) {
        out_ += fmt::format("{}{}=\"{}\"", first ? "" : ",", k, Escape(val));
        first = false;
      }
      out_ += '}';
    }
    out_ += fmt::format(" {}\n", v);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// One connection: requests until the client closes or a deadline passes.
void Session(asio::ip::tcp::socket socket, Cluster& cluster) {
  beast::tcp_stream stream(std::move(socket));
  auto buffer = std::make_shared<beast::flat_buffer>();
  auto req = std::make_shared<http::request<http::string_body>>();
  stream.expires_after(kIoDeadline);
  auto s = std::make_shared<beast::tcp_stream>(std::move(stream));
  http::async_read(*s, *buffer, *req, [s, buffer, req, &cluster](beast::error_code ec, size_t) {
    if (ec) return;
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(req->version());
    res->keep_alive(false);
    std::string target(req->target());
    if (req->method() != http::verb::get && req->method() != http::verb::head) {
      res->result(http::status::method_not_allowed);
      res->body() = "GET /metrics\n";
    } else if (target == "/metrics" || target.rfind("/metrics?", 0) == 0) {
      res->result(http::status::ok);
      res->set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      res->body() = MetricsServer::Render(cluster);
    } else {
      res->result(http::status::not_found);
      res->body() = "not found; metrics are at /metrics\n";
    }
    res->prepare_payload();
    s->expires_after(kIoDeadline);
    http::async_write(*s, *res, [s, res](beast::error_code, size_t) {
      beast::error_code ignored;
      s->socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    });
  });
}

}  // namespace

struct MetricsServer::Impl {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor{io};
  std::thread thread;
};

MetricsServer::MetricsServer(Cluster& cluster, std::string host, uint16_t port)
    : cluster_(cluster), host_(std::move(host)), port_(port), impl_(std::make_unique<Impl>()) {}

MetricsServer::~MetricsServer() { Stop(); }

Status MetricsServer::Start() {
  beast::error_code ec;
  auto addr = asio::ip::make_address(host_, ec);
  if (ec) return Status::InvalidArgument(fmt::format("metrics: bad address {}", host_));
  asio::ip::tcp::endpoint ep(addr, port_);
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(64, ec);
  if (ec)
    return Status::IOError(
        fmt::format("metrics: cannot listen on {}:{}: {}", host_, port_, ec.message()));
  fcntl(a.native_handle(), F_SETFD, FD_CLOEXEC);
  port_ = a.local_endpoint().port();
  struct Acceptor {
    MetricsServer* self;
    void operator()() {
      self->impl_->acceptor.async_accept(
          [s = self](beast::error_code e, asio::ip::tcp::socket sock) {
            if (e == asio::error::operation_aborted) return;
            if (!e) {
              fcntl(sock.native_handle(), F_SETFD, FD_CLOEXEC);
              Session(std::move(sock), s->cluster_);
            }
            Acceptor{s}();
          });
    }
  };
  Acceptor{this}();
  impl_->thread = std::thread([this] { impl_->io.run(); });
  Log("master")->info("metrics: http://{}:{}/metrics", host_, port_);
  return Status::OK();
}

void MetricsServer::Stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  asio::post(impl_->io, [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
    impl_->io.stop();
  });
  impl_->thread.join();
}

std::string MetricsServer::Render(Cluster& cluster) {
  Writer w;
  auto power = cluster.monitor().Snapshot();
  w.Family("wattdb_power_watts", "gauge",
           "Power draw of each metered component (newest good reading).");
  for (const auto& p : power) {
    w.Sample("wattdb_power_watts", {{"component", p.component}, {"meter", p.meter}}, p.watts);
  }
  w.Family("wattdb_energy_joules_total", "counter",
           "Energy of each component since the master started (gaps left out).");
  for (const auto& p : power)
    w.Sample("wattdb_energy_joules_total", {{"component", p.component}}, p.joules);
  w.Family("wattdb_meter_ok", "gauge", "1 if the component's newest meter reading succeeded.");
  for (const auto& p : power)
    w.Sample("wattdb_meter_ok", {{"component", p.component}}, p.meter_ok ? 1 : 0);
  w.Family("wattdb_meter_gap_seconds_total", "counter", "Time not covered by meter readings.");
  for (const auto& p : power)
    w.Sample("wattdb_meter_gap_seconds_total", {{"component", p.component}}, p.gap_seconds);

  auto segs = cluster.catalog().AllSegments();
  std::map<NodeId, NodeInfo> live;
  for (auto& n : cluster.registry().Snapshot()) live[n.id] = n;
  w.Family("wattdb_node_up", "gauge", "1 if the node is registered and heartbeating.");
  for (const auto& n : cluster.config().nodes) {
    w.Sample("wattdb_node_up", {{"node", std::to_string(n.id)}}, live[n.id].up ? 1 : 0);
  }
  w.Family("wattdb_node_power_state", "gauge", "1 for the node's current power state.");
  for (const auto& p : cluster.power().Snapshot()) {
    for (auto st : {power::PowerState::kOn, power::PowerState::kSuspended, power::PowerState::kOff,
                    power::PowerState::kUnknown}) {
      w.Sample("wattdb_node_power_state",
               {{"node", std::to_string(p.id)}, {"state", power::PowerStateName(st)}},
               p.state == st ? 1 : 0);
    }
  }
  w.Family("wattdb_node_cpu_percent", "gauge", "CPU of the node process, percent of one core.");
  for (const auto& n : cluster.config().nodes) {
    w.Sample("wattdb_node_cpu_percent", {{"node", std::to_string(n.id)}}, live[n.id].cpu_percent);
  }
  w.Family("wattdb_node_segments", "gauge", "Segments owned by the node.");
  std::map<NodeId, int> owned;
  for (const auto& s : segs) owned[s.node]++;
  for (const auto& n : cluster.config().nodes) {
    w.Sample("wattdb_node_segments", {{"node", std::to_string(n.id)}}, owned[n.id]);
  }
  w.Family("wattdb_segments", "gauge", "Segments in the cluster.");
  w.Sample("wattdb_segments", {}, static_cast<double>(segs.size()));
  const QueryCounters& q = cluster.queries();
  w.Family("wattdb_statements_total", "counter", "Statements finished.");
  w.Sample("wattdb_statements_total", {}, static_cast<double>(q.statements.load()));
  w.Family("wattdb_statement_errors_total", "counter", "Statements that failed.");
  w.Sample("wattdb_statement_errors_total", {}, static_cast<double>(q.errors.load()));
  w.Family("wattdb_statement_seconds_total", "counter", "Time spent executing statements.");
  w.Sample("wattdb_statement_seconds_total", {}, static_cast<double>(q.micros.load()) / 1e6);
  w.Family(
      "wattdb_generic_plan_executions_total", "counter",
      "Executions of prepared SELECTs that reused their generic plan (no parsing or planning).");
  w.Sample("wattdb_generic_plan_executions_total", {}, static_cast<double>(q.generic_plans.load()));
  w.Family("wattdb_key_writes_total", "counter",
           "Single-row UPDATEs and DELETEs by key that the row's node evaluated and prepared in "
           "one round trip.");
  w.Sample("wattdb_key_writes_total", {}, static_cast<double>(q.key_writes.load()));
  w.Family("wattdb_key_write_template_executions_total", "counter",
           "Key writes of prepared statements that sent the node only their parameters (its plan "
           "decoded once).");
  w.Sample("wattdb_key_write_template_executions_total", {},
           static_cast<double>(q.key_write_templates.load()));
  w.Family("wattdb_point_read_template_executions_total", "counter",
           "Prepared SELECTs of one key run with their parameters in place (their plan neither "
           "copied nor filled in).");
  w.Sample("wattdb_point_read_template_executions_total", {},
           static_cast<double>(q.point_read_templates.load()));
  w.Family("wattdb_exchange_streams_taken_over_total", "counter",
           "Segment streams of prefetching exchanges whose consumer read the rest itself once it "
           "reached them.");
  w.Sample("wattdb_exchange_streams_taken_over_total", {},
           static_cast<double>(rpc::ExchangeSource::StreamsTakenOver()));
  w.Family("wattdb_statement_restarts_total", "counter",
           "READ COMMITTED statements undone and run again on a fresh snapshot after meeting a row "
           "changed since theirs.");
  w.Sample("wattdb_statement_restarts_total", {}, static_cast<double>(q.restarts.load()));
  w.Family("wattdb_offloaded_total", "counter",
           "Plan subtrees (aggregation, sort, join) a helper node ran to the end.");
  w.Sample("wattdb_offloaded_total", {}, static_cast<double>(q.offloaded.load()));
  w.Family("wattdb_offload_failures_total", "counter",
           "Offloaded plan subtrees whose helper node failed (the master then ran them, or the "
           "statement failed).");
  w.Sample("wattdb_offload_failures_total", {}, static_cast<double>(q.offload_failures.load()));
  return w.Take();
}

}  // namespace wattdb::master
