#include "master/energy/controller.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/sqlstate.h"
#include "master/cluster/drain.h"

namespace wattdb::master {

uint64_t ControlNode::bytes() const {
  uint64_t b = 0;
  for (const auto& s : segments) b += s.bytes;
  return b;
}

uint64_t ControlNode::bytes_to_copy(const std::vector<const ControlNode*>& live) const {
  uint64_t b = 0;
  for (const auto& s : segments) {
    bool followed = std::any_of(live.begin(), live.end(), [&](const ControlNode* n) {
      return n->id != id && std::count(s.followers.begin(), s.followers.end(), n->id);
    });
    if (!followed) b += s.bytes;
  }
  return b;
}

double ControlNode::heat() const {
  double h = 0;
  for (const auto& s : segments) h += s.heat;
  return h;
}

namespace {

// The fewest live copies (on `live` nodes other than `node`) of a replicated segment that
// has a copy on `node`; INT_MAX if it has none.
int LiveCopiesWithout(const std::vector<const ControlNode*>& live, NodeId node) {
  int fewest = std::numeric_limits<int>::max();
  auto is_live = [&](NodeId id) {
    return id != node &&
           std::any_of(live.begin(), live.end(), [&](const ControlNode* n) { return n->id == id; });
  };
  for (const ControlNode* n : live) {
    for (const auto& s : n->segments) {
      if (s.followers.empty()) continue;
      bool here = n->id == node || std::count(s.followers.begin(), s.followers.end(), node);
      if (!here) continue;
      int copies = is_live(n->id) ? 1 : 0;
      for (NodeId f : s.followers) copies += is_live(f) ? 1 : 0;
      if (n->id == node) copies = std::max(copies, 1);  // its drain leaves one on a live node
      fewest = std::min(fewest, copies);
    }
  }
  return fewest;
}

}  // namespace

struct EnergyController::Inputs {
  std::vector<const ControlNode*> active;  // active and up
  std::vector<NodeId> wakeable;            // asleep, not failed, preferred first
  double demand = 0;                       // cores in use on the active nodes
  double capacity = 0;                     // their cores
  double window_mean = 0;                  // demand over the window
  double forecast = 0;                     // demand horizon_s ahead
  double low_s = 0;                        // how long demand has stayed below scale-in
  double statement_ms = 0;                 // mean time of the statements of the last interval
  NodeId busy = 0;                         // a node under an operator action, if any
};

namespace {

constexpr double kMB = 1024.0 * 1024.0;
constexpr int kMaxDrainRounds = 20;  // a drain before a sleep gives up sooner than DRAIN

double Ratio(double a, double b) { return b > 0 ? a / b : 0; }

bool Pinned(const EnergyPolicy& p, NodeId id) {
  return std::find(p.pinned.begin(), p.pinned.end(), id) != p.pinned.end();
}

// Weight of a segment for balancing: its heat, or its bytes while nothing is hot.
double Weight(const ControlSegment& s, bool by_heat) {
  return by_heat ? s.heat : static_cast<double>(s.bytes);
}

bool AnyHeat(const std::vector<ControlNode>& nodes) {
  for (const auto& n : nodes) {
    if (n.heat() > 0) return true;
  }
  return false;
}

}  // namespace

EnergyController::EnergyController(ControlPlane& plane, const Clock& clock, EnergyPolicy policy)
    : plane_(plane), clock_(clock), policy_(std::move(policy)) {}

void EnergyController::SetPolicy(EnergyPolicy p) {
  MutexLock l(policy_mu_);
  policy_ = std::move(p);
}

EnergyPolicy EnergyController::policy() const {
  MutexLock l(policy_mu_);
  return policy_;
}

double EnergyController::EffectiveRate(const EnergyPolicy& p) const {
  double cap = p.migration_mb_s * kMB;
  if (move_rate_ <= 0) return cap > 0 ? cap : 50 * kMB;
  return cap > 0 ? std::min(cap, move_rate_) : move_rate_;
}

EnergyController::Inputs EnergyController::Measure(const std::vector<ControlNode>& nodes,
                                                   const EnergyPolicy& p, int64_t now) {
  Inputs in;
  std::vector<const ControlNode*> asleep;
  for (const auto& n : nodes) {
    if (n.busy) in.busy = n.id;
    if (n.state == ControlState::kActive && n.up) {
      in.active.push_back(&n);
      in.demand += n.cpu_cores;
      in.capacity += n.profile.cpus;
    } else if ((n.state == ControlState::kSuspended || n.state == ControlState::kOff) && !n.busy &&
               !failed_.count(n.id)) {
      asleep.push_back(&n);
    }
  }
  // Suspended nodes first: they resume in seconds, an off node boots.
  std::stable_sort(asleep.begin(), asleep.end(), [](const ControlNode* a, const ControlNode* b) {
    return (a->state == ControlState::kSuspended) > (b->state == ControlState::kSuspended);
  });
  for (const auto* n : asleep) in.wakeable.push_back(n->id);

  auto st = plane_.Statements();
  if (st.first > last_statements_.first && st.second >= last_statements_.second) {
    in.statement_ms =
        (st.second - last_statements_.second) / 1000.0 / (st.first - last_statements_.first);
  }
  last_statements_ = st;
  if (!forecaster_ || forecaster_kind_ != p.forecaster) {
    forecaster_ = std::make_unique<Forecaster>(p.forecaster, p.alpha, p.beta);
    forecaster_kind_ = p.forecaster;
  }
  double t = now / 1e6;
  forecaster_->Observe(t, in.demand);
  in.forecast = forecaster_->Forecast(p.horizon_s);
  window_.emplace_back(now, in.demand);
  while (!window_.empty() && window_.front().first < now - static_cast<int64_t>(p.window_s * 1e6))
    window_.pop_front();
  double sum = 0;
  for (const auto& [_, d] : window_) sum += d;
  in.window_mean = window_.empty() ? 0 : sum / window_.size();
  if (in.demand < (p.scale_in_cpu - p.hysteresis) * in.capacity) {
    if (low_since_us_ < 0) low_since_us_ = now;
    in.low_s = (now - low_since_us_) / 1e6;
  } else {
    low_since_us_ = -1;
  }
  return in;
}

namespace {
// The most nodes the policy lets be active, of `total`.
int MaxActive(const EnergyPolicy& p, size_t total) {
  return p.max_active_nodes == 0 ? static_cast<int>(total) : p.max_active_nodes;
}
}  // namespace

DecisionRecord EnergyController::Step() {
  EnergyPolicy p = policy();
  int64_t now = clock_.NowMicros();
  std::vector<ControlNode> nodes = plane_.Observe();
  for (const auto& n : nodes) {
    if (n.up) failed_.erase(n.id);  // came back after all
  }
  Inputs in = Measure(nodes, p, now);

  DecisionRecord rec;
  rec.time_us = clock_.WallMicros();
  rec.mode = PolicyModeName(p.mode);
  rec.active_nodes = static_cast<int>(in.active.size());
  rec.utilization = Ratio(in.demand, in.capacity);
  rec.window_utilization = Ratio(in.window_mean, in.capacity);
  rec.forecast_utilization = Ratio(in.forecast, in.capacity);
  rec.scale_out_cpu = p.scale_out_cpu;
  rec.scale_in_cpu = p.scale_in_cpu;

  if (p.mode == EnergyPolicy::Mode::kManual) {
    rec.reason = "mode is manual";
    return Done(rec);
  }
  if (in.busy != 0) {
    rec.reason = fmt::format("an operator action on node {} is running", in.busy);
    return Done(rec);
  }
  int max_active = MaxActive(p, nodes.size());
  int active = static_cast<int>(in.active.size());
  int floor = p.mode == EnergyPolicy::Mode::kStatic ? max_active : p.min_active_nodes;
  if (active < floor && !in.wakeable.empty()) {
    rec.decision = "wake";
    rec.reason = p.mode == EnergyPolicy::Mode::kStatic ? "static mode keeps every node on"
                                                       : "fewer active nodes than min_active_nodes";
    DoWake(nodes, in.wakeable, floor - active, p, &rec);
    return Act(rec, now);
  }
  if (p.mode == EnergyPolicy::Mode::kStatic) {
    rec.reason =
        failed_.empty() ? "static mode: every node on" : "static mode: a node failed to wake";
    return Done(rec);
  }
  if (last_action_us_ >= 0 && now - last_action_us_ < static_cast<int64_t>(p.cooldown_s * 1e6)) {
    rec.reason = "cooldown after the last action";
    return Done(rec);
  }

  if (auto d = ScaleOut(p, in, nodes, rec, now)) return *d;
  if (auto d = Rebalance(p, in, nodes, rec, now)) return *d;
  rebalanced_node_ = 0;
  return ScaleIn(p, in, nodes, rec, now);
}

std::optional<DecisionRecord> EnergyController::ScaleOut(const EnergyPolicy& p, const Inputs& in,
                                                         std::vector<ControlNode>& nodes,
                                                         DecisionRecord rec, int64_t now) {
  const int active = static_cast<int>(in.active.size()), max_active = MaxActive(p, nodes.size());
  double out_at = (p.scale_out_cpu + p.hysteresis) * in.capacity;
  // The forecast, not the last sample: one busy interval is not a trend.
  double peak = in.forecast;
  bool slow = p.latency_target_ms > 0 && in.statement_ms > p.latency_target_ms &&
              in.demand > (p.scale_in_cpu + p.hysteresis) * in.capacity;
  if (!(peak > out_at || active == 0 || slow)) return std::nullopt;
  if (active >= max_active) {
    rec.reason = slow && !(peak > out_at)
                     ? "statements slower than latency_target_ms, but max_active_nodes are active"
                     : "demand above scale_out_cpu, but max_active_nodes are active";
    return Done(rec);
  }
  if (in.wakeable.empty()) {
    rec.reason = "demand above scale_out_cpu, but no node can be woken";
    return Done(rec);
  }
  double per_node = 0;
  for (const auto& n : nodes) per_node += n.profile.cpus / nodes.size();
  int needed =
      per_node > 0 ? static_cast<int>(std::ceil(peak / (p.scale_out_cpu * per_node))) : active + 1;
  // Saturated nodes hide how much more is wanted: then at least double the active nodes.
  if (in.demand >= kSaturated * in.capacity) needed = std::max(needed, 2 * active);
  int count = std::clamp(needed - active, 1,
                         std::min(max_active - active, static_cast<int>(in.wakeable.size())));
  rec.decision = "wake";
  rec.reason = peak > out_at || active == 0 ? "forecast demand above scale_out_cpu"
                                            : "statements slower than latency_target_ms";
  DoWake(nodes, in.wakeable, count, p, &rec);
  return Act(rec, now);
}

std::optional<DecisionRecord> EnergyController::Rebalance(const EnergyPolicy& p, const Inputs& in,
                                                          std::vector<ControlNode>& nodes,
                                                          DecisionRecord rec, int64_t now) {
  const int active = static_cast<int>(in.active.size()), max_active = MaxActive(p, nodes.size());
  // One node hot while the cluster is not: move its hottest segments to cooler nodes.
  const ControlNode* hot = nullptr;
  for (const ControlNode* n : in.active) {
    if (n->profile.cpus > 0 &&
        (!hot || n->cpu_cores / n->profile.cpus > hot->cpu_cores / hot->profile.cpus))
      hot = n;
  }
  if (hot && active > 1 && hot->cpu_cores / hot->profile.cpus > p.scale_out_cpu + p.hysteresis &&
      !hot->segments.empty()) {
    std::set<NodeId> cooler;
    for (const ControlNode* n : in.active) {
      if (n != hot) cooler.insert(n->id);
    }
    DecisionRecord none = rec;
    rec.decision = "rebalance";
    rec.reason = fmt::format("node {} above scale_out_cpu, the cluster below it", hot->id);
    // Rebalancing that has not cooled the same node after kRebalanceTries goes on to a wake.
    rebalances_ = rebalanced_node_ == hot->id ? rebalances_ + 1 : 1;
    rebalanced_node_ = hot->id;
    int moved = 0;
    if (rebalances_ <= kRebalanceTries) {
      moved = Refill(nodes, cooler, p, &rec, kRebalanceMoves);
      if (rec.outcome.empty()) rec.outcome = "ok";
      if (moved > 0 || rec.outcome != "ok") return Act(rec, now);
    }
    // Most of the heat in one segment: no move can divide it, a split can.
    const ControlSegment* top = nullptr;
    for (const auto& sg : hot->segments) {
      if (!top || sg.heat > top->heat) top = &sg;
    }
    if (top && top->heat > 0 && 2 * top->heat > hot->heat()) {
      auto fresh = plane_.Split(top->id);
      if (fresh.ok() && *fresh != 0) {
        none.decision = "split";
        none.reason = fmt::format("node {} above scale_out_cpu, most of its load in segment {}",
                                  hot->id, top->id);
        none.actions = fmt::format("split segment {} into {} and {}", top->id, top->id, *fresh);
        none.outcome = "ok";
        return Act(none, now);
      }
    }
    // The hot node's segments cannot be spread any better over the active nodes: another node
    // takes some of them.
    if (active < max_active && !in.wakeable.empty()) {
      none.decision = "wake";
      none.reason = rebalances_ > kRebalanceTries
                        ? fmt::format("node {} above scale_out_cpu after {} rebalances", hot->id,
                                      kRebalanceTries)
                        : fmt::format(
                              "node {} above scale_out_cpu, no move among the active nodes would "
                              "even the load",
                              hot->id);
      DoWake(nodes, in.wakeable, 1, p, &none);
      return Act(none, now);
    }
    none.reason = fmt::format("node {} above scale_out_cpu, no move would even the load", hot->id);
    return Done(none);
  }
  return std::nullopt;
}

DecisionRecord EnergyController::ScaleIn(const EnergyPolicy& p, const Inputs& in,
                                         std::vector<ControlNode>& nodes, DecisionRecord rec,
                                         int64_t now) {
  const int active = static_cast<int>(in.active.size()), max_active = MaxActive(p, nodes.size());
  double in_at = (p.scale_in_cpu - p.hysteresis) * in.capacity;
  bool low = in.low_s >= p.window_s && in.window_mean < in_at && in.forecast < in_at;
  if (active > max_active) low = true;  // over the cap: shed a node whatever the load
  if (!low) {
    rec.reason = in.demand < in_at ? "demand below scale_in_cpu, not yet for window_s"
                                   : "demand within thresholds";
    return Done(rec);
  }
  if (active <= std::max(1, p.min_active_nodes)) {
    rec.reason = "demand below scale_in_cpu, at min_active_nodes";
    return Done(rec);
  }
  // The node whose drain copies least: segments a live node follows change leader instead.
  // None that would leave a replicated segment with fewer live copies than min_live_replicas.
  const ControlNode* victim = nullptr;
  uint64_t victim_bytes = 0;
  bool short_of_copies = false;
  for (const ControlNode* n : in.active) {
    if (Pinned(p, n->id) || n->hosted) continue;
    if (LiveCopiesWithout(in.active, n->id) < p.min_live_replicas) {
      short_of_copies = true;
      continue;
    }
    uint64_t b = n->bytes_to_copy(in.active);
    if (!victim || b < victim_bytes ||
        (b == victim_bytes &&
         (n->heat() < victim->heat() || (n->heat() == victim->heat() && n->id > victim->id)))) {
      victim = n;
      victim_bytes = b;
    }
  }
  if (!victim) {
    rec.reason = short_of_copies ? "demand below scale_in_cpu, but no node can sleep without "
                                   "leaving a segment short of min_live_replicas live copies"
                                 : "demand below scale_in_cpu, every active node is pinned";
    return Done(rec);
  }
  double cap_after = in.capacity - victim->profile.cpus;
  double fit_at = (p.scale_out_cpu - p.hysteresis) * cap_after;
  if (active <= max_active && in.forecast >= fit_at) {
    rec.reason = "demand below scale_in_cpu, but the other nodes could not carry the forecast";
    return Done(rec);
  }
  BreakEven be = ComputeBreakEven(p, victim->profile, victim_bytes, EffectiveRate(p));
  double idle = in.low_s;
  if (forecaster_->slope() > 0)
    idle = std::min(idle, (fit_at - forecaster_->level()) / forecaster_->slope());
  rec.predicted_idle_s = idle;
  rec.break_even_s = be.seconds;
  if (active <= max_active && !(idle > be.seconds)) {
    rec.reason =
        fmt::format("break-even: node {} would not sleep long enough to save energy", victim->id);
    return Done(rec);
  }
  rec.decision = "sleep";
  rec.reason = active > max_active ? "more active nodes than max_active_nodes"
                                   : "demand below scale_in_cpu for window_s";
  DoSleep(nodes, victim->id, p, &rec);
  return Act(rec, now);
}

DecisionRecord EnergyController::Done(DecisionRecord r) {
  Record(r);
  return r;
}

DecisionRecord EnergyController::Act(DecisionRecord r, int64_t started_us) {
  if (r.decision != "rebalance") rebalanced_node_ = 0;
  last_action_us_ = clock_.NowMicros();
  window_.clear();
  low_since_us_ = -1;
  r.duration_ms = (last_action_us_ - started_us) / 1000.0;
  return Done(std::move(r));
}

void EnergyController::DoWake(const std::vector<ControlNode>& nodes,
                              const std::vector<NodeId>& candidates, int count,
                              const EnergyPolicy& p, DecisionRecord* rec) {
  std::set<NodeId> woken;
  std::string errors;
  for (NodeId id : candidates) {
    if (static_cast<int>(woken.size()) >= count) break;
    int64_t t0 = clock_.NowMicros();
    Status s = plane_.Wake(id);
    double secs = (clock_.NowMicros() - t0) / 1e6;
    if (s.ok()) {
      woken.insert(id);
      rec->actions +=
          fmt::format("{}woke node {} in {:.1f} s", rec->actions.empty() ? "" : "; ", id, secs);
    } else {
      failed_[id] = s.message();
      errors = s.message();
      rec->actions += fmt::format("{}node {} did not wake: {}", rec->actions.empty() ? "" : "; ",
                                  id, s.message());
      Log("energy")->warn("node {} did not wake (marked failed, trying another): {}", id,
                          s.message());
    }
  }
  if (woken.empty()) {
    rec->outcome = errors.empty() ? "no node could be woken" : errors;
    return;
  }
  (void)nodes;
  int moved = Refill(plane_.Observe(), woken, p, rec);
  (void)moved;
  if (rec->outcome.empty()) rec->outcome = "ok";
}

int EnergyController::Refill(const std::vector<ControlNode>& nodes, const std::set<NodeId>& fresh,
                             const EnergyPolicy& p, DecisionRecord* rec, int max_moves) {
  bool by_heat = AnyHeat(nodes);
  std::map<NodeId, double> load;
  std::map<NodeId, std::vector<ControlSegment>> segs;
  for (const auto& n : nodes) {
    if (n.state != ControlState::kActive || !n.up) continue;
    load[n.id] = 0;
    for (const auto& s : n.segments) {
      load[n.id] += Weight(s, by_heat);
      segs[n.id].push_back(s);
    }
  }
  int moves = 0;
  uint64_t bytes = 0;
  while (moves < max_moves) {
    NodeId target = 0;
    for (NodeId f : fresh) {
      if (load.count(f) && (target == 0 || load[f] < load[target])) target = f;
    }
    if (target == 0) break;
    // Donors from the most loaded down; the first with a segment whose move narrows its gap
    // to the target (weight at most half the gap) gives its hottest such segment.
    std::vector<NodeId> donors;
    for (const auto& [id, l] : load) {
      if (id != target && l > load[target]) donors.push_back(id);
    }
    std::sort(donors.begin(), donors.end(), [&](NodeId a, NodeId b) { return load[a] > load[b]; });
    NodeId donor = 0;
    std::vector<ControlSegment>::iterator it;
    for (NodeId d : donors) {
      double gap = load[d] - load[target];
      auto& list = segs[d];
      std::sort(list.begin(), list.end(), [&](const ControlSegment& a, const ControlSegment& b) {
        return Weight(a, by_heat) > Weight(b, by_heat);
      });
      // One the target follows first: it changes leader, no byte moves.
      auto fits = [&](const ControlSegment& s) {
        double w = Weight(s, by_heat);
        return w > 0 && 2 * w <= gap;
      };
      it = std::find_if(list.begin(), list.end(), [&](const ControlSegment& s) {
        return fits(s) && std::count(s.followers.begin(), s.followers.end(), target);
      });
      if (it == list.end()) it = std::find_if(list.begin(), list.end(), fits);
      if (it != list.end()) {
        donor = d;
        break;
      }
    }
    if (donor == 0) break;
    auto& list = segs[donor];
    ControlSegment s = *it;
    Status st = PacedMove(s, target, p, &bytes);
    if (!st.ok()) {
      rec->outcome = st.message();
      break;
    }
    moves++;
    double w = Weight(s, by_heat);
    load[donor] -= w;
    load[target] += w;
    list.erase(it);
    segs[target].push_back(s);
  }
  rec->actions +=
      fmt::format("{}moved {} segment(s), {:.1f} MB, hottest first (by {})",
                  rec->actions.empty() ? "" : "; ", moves, bytes / kMB, by_heat ? "heat" : "bytes");
  return moves;
}

Status EnergyController::PacedMove(const ControlSegment& seg, NodeId to, const EnergyPolicy& p,
                                   uint64_t* moved) {
  int64_t t0 = clock_.NowMicros();
  auto result = plane_.Move(seg.id, to);
  if (!result.ok()) {
    // A failed move leaves the segment where it was (moves are logged and rolled back), so
    // one retry is safe; a node just woken sometimes drops its first connection.
    Log("energy")->info("move of segment {} to node {} failed, retrying once: {}", seg.id, to,
                        result.status().message());
    if (!plane_.Pause(0.5))
      return Status::Aborted("the energy controller is stopping", sqlstate::kAdminShutdown);
    result = plane_.Move(seg.id, to);
  }
  if (!result.ok()) return result.status();
  MovedSegment m = *result;
  *moved += m.bytes;
  if (m.bytes >= (1u << 20) && m.seconds > 0) {
    double r = m.bytes / m.seconds;
    move_rate_ = move_rate_ <= 0 ? r : 0.7 * move_rate_ + 0.3 * r;
  }
  if (p.migration_mb_s > 0) {
    double elapsed = (clock_.NowMicros() - t0) / 1e6;
    double owed = m.bytes / (p.migration_mb_s * kMB) - elapsed;
    if (owed > 0 && !plane_.Pause(owed))
      return Status::Aborted("the energy controller is stopping", sqlstate::kAdminShutdown);
  }
  return Status::OK();
}

void EnergyController::DoSleep(const std::vector<ControlNode>& first, NodeId victim,
                               const EnergyPolicy& p, DecisionRecord* rec) {
  Status s = plane_.SetDraining(victim, true);
  if (!s.ok()) {
    rec->outcome = s.message();
    return;
  }
  uint64_t bytes = 0;
  int moves = 0;
  // Each round: the victim's segments hottest first, each to the coolest active node (by
  // the round's estimate, raised by every segment it is given), paced (PacedMove).
  std::vector<ControlNode> nodes = first;
  bool observed = true;  // `nodes` is fresh
  std::map<NodeId, double> load;
  std::map<SegmentId, ControlSegment> segments;  // the round's
  bool by_heat = false;
  DrainSteps steps;
  steps.owned = [&]() -> Result<std::vector<SegmentId>> {
    if (!observed) nodes = plane_.Observe();
    observed = false;
    const ControlNode* v = nullptr;
    by_heat = AnyHeat(nodes);
    load.clear();
    segments.clear();
    for (const auto& n : nodes) {
      if (n.id == victim) v = &n;
      if (n.id == victim || n.state != ControlState::kActive || !n.up) continue;
      load[n.id] = 0;
      for (const auto& sg : n.segments) load[n.id] += Weight(sg, by_heat);
    }
    std::vector<SegmentId> ids;
    if (!v || v->segments.empty()) return ids;
    if (load.empty()) {
      return Status::Sql(sqlstate::kObjectNotInPrerequisiteState,
                         "no other active node to take the segments");
    }
    std::vector<ControlSegment> list = v->segments;
    std::sort(list.begin(), list.end(), [&](const ControlSegment& a, const ControlSegment& b) {
      return Weight(a, by_heat) > Weight(b, by_heat);
    });
    for (const auto& sg : list) {
      ids.push_back(sg.id);
      segments[sg.id] = sg;
    }
    return ids;
  };
  steps.move = [&](SegmentId id) -> Status {
    // To the coolest active node that follows the segment (leadership changes hands, no byte
    // moves), else to the coolest of all.
    auto cooler = [](const auto& a, const auto& b) { return a.second < b.second; };
    auto target = load.end();
    for (NodeId f : segments[id].followers) {
      auto it = load.find(f);
      if (it != load.end() && (target == load.end() || cooler(*it, *target))) target = it;
    }
    if (target == load.end()) target = std::min_element(load.begin(), load.end(), cooler);
    RETURN_NOT_OK(PacedMove(segments[id], target->first, p, &bytes));
    target->second += Weight(segments[id], by_heat);
    return Status::OK();
  };
  s = DrainRounds(victim, kMaxDrainRounds, steps, &moves);
  rec->actions =
      fmt::format("drained node {}: {} segment(s), {:.1f} MB", victim, moves, bytes / kMB);
  if (s.ok()) {
    bool suspend = p.standby == "suspend";
    s = plane_.Sleep(victim, suspend);
    if (!s.ok() && suspend && s.sqlstate() == sqlstate::kFeatureNotSupported) {
      rec->actions += fmt::format("; cannot suspend ({}), powering off", s.message());
      suspend = false;
      s = plane_.Sleep(victim, false);
    }
    if (s.ok())
      rec->actions += fmt::format("; node {} {}", victim, suspend ? "suspended" : "powered off");
  }
  if (!s.ok()) {
    (void)plane_.SetDraining(victim, false);
    rec->outcome = s.message();
    Log("energy")->warn("putting node {} to sleep failed (it stays active): {}", victim,
                        s.message());
    return;
  }
  rec->outcome = "ok";
}

void EnergyController::Record(DecisionRecord rec) {
  DecisionRecord last = log_.Last();
  if (rec.decision == "none" && last.decision == "none" && last.reason == rec.reason &&
      last.time_us != 0)
    return;
  if (rec.decision != "none") {
    Log("energy")->info(
        "decision={} reason=\"{}\" utilization={:.2f} forecast={:.2f} actions=\"{}\" outcome={} "
        "ms={:.0f}",
        rec.decision, rec.reason, rec.utilization, rec.forecast_utilization, rec.actions,
        rec.outcome, rec.duration_ms);
  }
  log_.Add(std::move(rec));
}

}  // namespace wattdb::master
