// A lab wattmeter's logger feeds samples, one per line "<unix seconds> <watts>" (separated by
// blanks or a comma), over TCP or by appending to a file. A thread follows the source; Read()
// returns the newest sample while it is fresh.
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

#include "common/logging.h"
#include "net/stream.h"
#include "power/meter.h"

namespace wattdb::power {

namespace {

constexpr int kRetryMs = 1000;
constexpr int kPollMs = 200;

class ExternalMeter : public Meter {
 public:
  explicit ExternalMeter(MeterConfig c) : c_(std::move(c)) {
    thread_ = std::thread([this] { Follow(); });
  }
  ~ExternalMeter() override {
    {
      std::lock_guard<std::mutex> l(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  const char* type() const override { return "external"; }

  Result<MeterReading> Read(const ComponentStatus&) override {
    std::lock_guard<std::mutex> l(mu_);
    auto now = std::chrono::steady_clock::now();
    std::string why = error_.empty() ? "" : " (" + error_ + ")";
    if (!have_) return Status::Unavailable(fmt::format("no sample yet from {}{}", c_.source, why));
    int64_t age = std::chrono::duration_cast<std::chrono::milliseconds>(now - arrived_).count();
    if (age > c_.stale_ms) {
      return Status::Unavailable(fmt::format("no sample from {} for {} ms{}", c_.source, age, why));
    }
    return MeterReading{watts_, {}};
  }

 private:
  void Follow() {
    while (!Stopping()) {
      Status s = c_.source.rfind("tcp://", 0) == 0 ? FollowTcp(c_.source.substr(6))
                                                   : FollowFile(c_.source);
      if (!s.ok()) SetError(s.message());
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait_for(l, std::chrono::milliseconds(kRetryMs), [this] { return stopping_; });
    }
  }

  Status FollowTcp(const std::string& hostport) {
    size_t colon = hostport.rfind(':');
    int port = colon == std::string::npos ? 0 : std::atoi(hostport.c_str() + colon + 1);
    if (port <= 0 || port > 65535) return Status::InvalidArgument("source must be tcp://host:port");
    net::asio::io_context io;
    ASSIGN_OR_RETURN(auto socket, net::ConnectTcp(io, hostport.substr(0, colon),
                                                  static_cast<uint16_t>(port), 2000));
    net::Stream stream(socket);
    std::string buf;
    char chunk[4096];
    while (!Stopping()) {
      auto n = stream.ReadSomeWithin(chunk, sizeof(chunk), kPollMs);
      if (n.status().IsTimedOut()) continue;
      if (!n.ok()) return Status::IOError(fmt::format("{}: {}", c_.source, n.status().message()));
      buf.append(chunk, *n);
      Consume(&buf);
      if (buf.size() > 4096)
        return Status::Corruption(fmt::format("{}: a line longer than 4096 bytes", c_.source));
    }
    return Status::OK();
  }

  Status FollowFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::IOError(fmt::format("cannot open {}", path));
    std::string buf;
    std::streamoff pos = 0;
    char chunk[4096];
    while (!Stopping()) {
      in.clear();
      in.read(chunk, sizeof(chunk));
      std::streamsize n = in.gcount();
      if (n > 0) {
        pos += n;
        buf.append(chunk, static_cast<size_t>(n));
        Consume(&buf);
        if (buf.size() > 4096)
          return Status::Corruption(fmt::format("{}: a line longer than 4096 bytes", path));
        continue;
      }
      std::ifstream probe(path, std::ios::binary | std::ios::ate);
      if (!probe) return Status::IOError(fmt::format("{} disappeared", path));
      if (probe.tellg() < pos) return Status::OK();  // truncated (rotated): start over
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait_for(l, std::chrono::milliseconds(kPollMs), [this] { return stopping_; });
    }
    return Status::OK();
  }

  // Takes the complete lines off the front of `buf`.
  void Consume(std::string* buf) {
    size_t start = 0, nl;
    while ((nl = buf->find('\n', start)) != std::string::npos) {
      std::string line = buf->substr(start, nl - start);
      start = nl + 1;
      lines_++;
      if (line.empty() || line[0] == '#') continue;
      for (char& ch : line) ch = ch == ',' ? ' ' : ch;
      double ts = 0, w = 0;
      char tail = 0;
      int got = std::sscanf(line.c_str(), "%lf %lf %c", &ts, &w, &tail);
      if (got != 2 || !std::isfinite(ts) || !std::isfinite(w) || w < 0 || w > 1e6) {
        garbage_++;
        SetError(fmt::format("line {} is not '<unix seconds> <watts>': '{}'", lines_,
                             line.substr(0, 80)));
        continue;
      }
      std::lock_guard<std::mutex> l(mu_);
      have_ = true;
      watts_ = w;
      arrived_ = std::chrono::steady_clock::now();
    }
    buf->erase(0, start);
  }

  void SetError(const std::string& e) {
    std::lock_guard<std::mutex> l(mu_);
    if (e != error_) Log("power")->warn("external meter {}: {}", c_.source, e);
    error_ = e;
  }

  bool Stopping() {
    std::lock_guard<std::mutex> l(mu_);
    return stopping_;
  }

  const MeterConfig c_;
  std::mutex mu_;  // guards the fields below
  std::condition_variable cv_;
  bool stopping_ = false;
  bool have_ = false;
  double watts_ = 0;
  std::chrono::steady_clock::time_point arrived_;
  std::string error_;
  uint64_t lines_ = 0, garbage_ = 0;  // follower thread only
  std::thread thread_;
};

}  // namespace

std::unique_ptr<Meter> MakeExternalMeter(const MeterConfig& config) {
  return std::make_unique<ExternalMeter>(config);
}

}  // namespace wattdb::power
