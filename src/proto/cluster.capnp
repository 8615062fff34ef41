# The node -> master conversation on the master's cluster port: a node registers once per
# connection, then sends a heartbeat carrying telemetry every telemetry interval.
@0xd2f6b1e0a7c34b51;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("wattdb::proto");

using Svc = import "node_service.capnp";

struct Telemetry {
  cpuPercent @0 :Float64;        # process CPU over the last interval, % of one core
  hostCpuPercent @1 :Float64;    # whole machine, % of all cores
  rssBytes @2 :UInt64;
  memTotalBytes @3 :UInt64;
  memAvailableBytes @4 :UInt64;
  diskBytes @5 :UInt64;          # bytes under the node's data directory
  diskReadBytesPerSec @6 :Float64;
  diskWriteBytesPerSec @7 :Float64;
  netRxBytesPerSec @8 :Float64;
  netTxBytesPerSec @9 :Float64;
  segments @10 :List(Svc.SegmentStats);
  wallMicros @11 :Int64;
  inDoubt @12 :List(UInt64);     # durably prepared transactions awaiting the master's decision
  lockWaits @13 :List(LockWait); # row-lock waits now: the master looks for cycles across nodes
}

struct LockWait {
  txn @0 :UInt64;                # waits for a row lock
  holder @1 :UInt64;             # that this transaction holds
}

struct NodeMessage {
  union {
    register :group {
      nodeId @0 :UInt32;
      host @1 :Text;
      port @2 :UInt16;
      pid @3 :Int32;
      incarnation @6 :UInt64;      # random per process start: the same one re-registering
    }                              # (resumed, reconnected) kept its memory
    heartbeat @4 :Telemetry;
    goodbye @5 :Void;              # clean shutdown: the node is about to exit
  }
}

struct MasterMessage {
  union {
    registered @0 :Void;
    rejected @1 :Text;
  }
}
