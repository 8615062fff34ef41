# The master <-> node conversation on a node's data port, and node <-> node segment pulls.
# Every request gets exactly one Response, except scan (a stream of scanBatch responses ending
# with one whose `last` is true) and exportSegment (one segmentExport response followed by
# the raw bytes of each file, in order, as raw frames).
@0xa08ee3d65013f2af;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("wattdb::proto");

struct Status {
  code @0 :UInt8;        # wattdb::Status::Code; 0 = ok
  message @1 :Text;
  sqlstate @2 :Text;
}

struct SegmentMeta {
  id @0 :UInt64;
  table @1 :UInt32;
  lo @2 :Data;           # inclusive; empty = -infinity
  hi @3 :Data;           # exclusive; empty = +infinity
  indexes @4 :List(IndexSpec);
}

struct IndexSpec {       # wattdb::IndexKeySpec
  id @0 :UInt32;
  columns @1 :List(UInt32);
  desc @2 :List(Bool);
}

struct Write {
  segment @0 :UInt64;
  key @1 :Data;
  kind @2 :UInt8;        # storage::VersionKind
  row @3 :Data;
  check @4 :Check;
  enum Check {
    none @0;             # blind write
    insert @1;           # key must not have a live version (else 23505)
    update @2;           # newest version must be visible at the snapshot (else 40001)
    lock @3;             # as update, but only lock the key (SELECT ... FOR UPDATE): no write
  }
}

struct ExportedFile {
  name @0 :Text;
  level @1 :Int32;
  size @2 :UInt64;
  smallestSeqno @3 :UInt64;
  largestSeqno @4 :UInt64;
  smallestKey @5 :Data;
  largestKey @6 :Data;
  numEntries @7 :UInt64;
  numDeletions @8 :UInt64;
}

struct SegmentStats {
  meta @0 :SegmentMeta;
  bytes @1 :UInt64;
  rowsRead @2 :UInt64;
  rowsWritten @3 :UInt64;
  collections @4 :UInt64;      # garbage collections of old versions (CollectGarbage)
  cachedReads @5 :UInt64;      # point reads answered from the newest-version cache
  replicaSeq @6 :UInt64;       # led or followed here: the last record numbered or applied,
  replicaTs @7 :UInt64;        # its commit timestamp and the log's length in bytes with it
  replicaOffset @8 :UInt64;    # (node/follower_log.h ReplicaPosition; 0: not replicated)
  keptFrom @9 :UInt64;         # led here with a copy asleep: the first record kept for it
  keptBytes @10 :UInt64;       # and the bytes kept (0: none kept)
}

struct SegmentPlace {                # where an offloaded plan's Exchange reads a segment
  segment @0 :UInt64;
  lo @1 :Data;
  hi @2 :Data;
  node @3 :UInt32;
  host @4 :Text;
  port @5 :UInt16;
}

struct NodeCpu {
  node @0 :UInt32;
  nanos @1 :UInt64;
}

struct NodeOperatorStats {           # one node's operator counters (exec/batch_codec.h
  node @0 :UInt32;                   # EncodeOperatorStats) in a plan's pre-order
  stats @1 :Data;
}

struct ExchangePlaces {
  places @0 :List(SegmentPlace);     # the segments of the Exchange's scan range, in key order
}

struct Request {
  union {
    ping @0 :Void;
    createSegment @1 :SegmentMeta;
    dropSegment @2 :UInt64;
    prepare :group {
      txn @3 :UInt64;
      snapshotTs @4 :UInt64;
      writes @5 :List(Write);
      durable @21 :Bool;             # persist before answering: the txn spans several nodes
      commitTs @25 :UInt64;          # nonzero: commit at once at this timestamp (one phase);
                                     # a key locked by another txn then fails fast with 55P03
      expect @34 :UInt64;            # nonzero: the txn's writes sent to this node in all; a
                                     # node that has another count lost some (aborts, 40001)
      minCommitTs @39 :UInt64;       # durable: the commit timestamp will exceed this; readers
                                     # of the txn's rows at snapshots above it wait for it
    }
    commit :group {
      txn @6 :UInt64;
      commitTs @7 :UInt64;
      expect @35 :UInt64;            # as in prepare (0: not checked)
      unsynced @63 :Bool;            # a durably prepared txn: apply without syncing (the
                                     # master keeps its decision until a later syncWal)
    }
    outcome @36 :UInt64;             # txn: did it commit here? (reply: committedTs, 0 = no);
                                     # a txn prepared in memory and not committed is aborted
                                     # then, so that the answer is final
    settleSplit :group {             # after a split's reply was lost: did it happen? Waits
      segment @37 :UInt64;           # for a split in progress; if it did not happen, no
      newId @38 :UInt64;             # later split may create newId (reply: splitKey or NotFound)
    }
    abort @8 :UInt64;                # txn
    rollbackTo :group {              # undo a failed statement's writes: keep the txn's first
      txn @43 :UInt64;               # `keep` writes here (0 = abort), drop the later ones
      keep @44 :UInt64;
    }
    scan :group {
      segment @9 :UInt64;
      lo @10 :Data;
      hi @11 :Data;
      readTs @12 :UInt64;
      batchRows @13 :UInt32;
      txn @22 :UInt64;               # nonzero: also show this transaction's pending writes
      index @26 :UInt32;             # nonzero: scan this secondary index's entries with index
      indexLo @27 :Data;             # keys in [indexLo, indexHi); lo/hi are then the segment
      indexHi @28 :Data;             # range the master expects (Stale if it shrank)
      fragment @41 :Data;            # a serialized plan whose leaf Scan these rows feed: the
                                     # node runs it and answers with column batches
      workMem @42 :UInt64;           # the fragment's work_mem (bytes per sort or hash table)
      params @67 :Data;              # set: `fragment` keeps its parameters ($n) and these are
                                     # their values (an encoded row, common/codec.h)
      analyze @69 :Bool;             # EXPLAIN ANALYZE: the last reply carries the fragment's
                                     # operator counters (else none are kept)
      followerEpoch @89 :UInt64;     # nonzero: a follower read; served only if this node
                                     # follows the segment in this epoch or a newer one and
                                     # holds everything committed at readTs (else the leader)
    }
    split :group {
      segment @14 :UInt64;
      newId @15 :UInt64;
      topBytes @65 :UInt64;          # 0: split at the middle; else split off about this many
                                     # bytes of the highest keys (a segment far past its size)
      pieces @68 :UInt32;            # with topBytes: cut up to this many pieces of that size
                                     # at once, as segments newId, newId + 1, ... in key order;
                                     # 0 counts as 1 (reply: splitKeys)
    }
    exportSegment @16 :UInt64;       # node -> node: send me this segment
    pullSegment :group {             # master -> target: fetch a segment from its owner
      segment @17 :UInt64;
      sourceHost @18 :Text;
      sourcePort @19 :UInt16;
    }
    listSegments @20 :Void;
    syncWal @64 :Void;               # make every write applied so far durable (reply:
                                     # incarnation)
    gcHorizon @23 :UInt64;           # no snapshot below this is in use: old versions may go
    compact @24 :UInt64;             # compact this segment now (VACUUM)
    addIndex :group {                # maintain an index in a segment, built at buildTs
      segment @29 :UInt64;
      spec @30 :IndexSpec;
      buildTs @31 :UInt64;
    }
    dropIndex :group {
      segment @32 :UInt64;
      index @33 :UInt32;
    }
    breakWait :group {               # master -> node: a deadlock across nodes; if `txn` still
      txn @45 :UInt64;               # waits here for `holder`, its wait ends with 40P01
      holder @46 :UInt64;
    }
    hostPower @40 :UInt8;            # master -> node: ask the host's OS, after replying, to
                                     # power off (1, soft) or suspend (2)
    runPlan :group {                 # master -> helper node: run this plan (operator offloading,
      plan @47 :Data;                # query/plan/offload.h); its Exchanges read the listed
      readTs @48 :UInt64;            # segments from their owners. Replies as fragment scans:
      txn @49 :UInt64;               # scanBatch.columns, then last with stats
      workMem @50 :UInt64;
      exchanges @51 :List(ExchangePlaces);  # one per Exchange of `plan`, in pre-order
      analyze @60 :Bool;             # EXPLAIN ANALYZE: the last reply also carries ownerStats
    }
    updateKey :group {               # an UPDATE (or DELETE) of the one row with key in [lo, hi),
      txn @52 :UInt64;               # evaluated here: `plan` (Project over Filter over Scan)
      snapshotTs @53 :UInt64;        # gives the new row from the row at the snapshot (with
      segment @54 :UInt64;           # the txn's own writes); it is prepared as an update
      lo @55 :Data;                  # (waits for the key's lock; 40001-conflict if a newer
      hi @56 :Data;                  # version committed). Reply: updated.
      plan @57 :Data;
      notNull @58 :List(UInt32);     # columns the new row must not have NULL in (23502)
      notNullErrors @59 :List(Text); # ... and 23502's message for each
      delete @61 :Bool;              # a DELETE: `plan` is the Filter over the Scan, and the
                                     # row it yields is deleted (prepared as an update would be)
      readCommitted @62 :Bool;       # a newer committed version is not a conflict: the row is
                                     # locked, and the plan runs again on that version
                                     # (PostgreSQL's EvalPlanQual)
      params @66 :Data;              # set: `plan` keeps its parameters ($n) and these are
                                     # their values (an encoded row, common/codec.h); such
                                     # plans are decoded once per node and kept by their bytes
    }
    # Segment replication (docs/design/replication.md).
    lead :group {                    # master -> leader: lead `segment` in `epoch` with these
      segment @70 :UInt64;           # followers (none: not replicated); its next record is
      epoch @71 :UInt64;             # numbered nextSeq (0: numbering goes on, same epoch)
      nextSeq @72 :UInt64;
      followers @73 :List(ReplicaNode);
      keepBytes @85 :UInt64;         # > 0: a copy sleeps; keep the records numbered from now on
    }                                # (up to this many bytes) to catch it up when it wakes
    follow :group {                  # master -> follower: follow `segment` in `epoch`, next
      segment @74 :UInt64;           # record nextSeq (0: no longer follow it)
      epoch @75 :UInt64;
      nextSeq @76 :UInt64;
    }
    replicaApply :group {            # leader -> follower: one record; the reply comes once
      segment @77 :UInt64;           # it is durable (Stale: another epoch; Aborted: behind)
      epoch @78 :UInt64;
      seq @79 :UInt64;
      ts @80 :UInt64;
      writes @81 :List(Write);       # kind and row as in prepare; check unused
      kind @82 :UInt8;               # 0 commit (txn: the prepared transaction it ends, or 0),
      txn @83 :UInt64;               # 1 txn's prepare (ts: it commits above), 2 txn's abort
      offset @84 :UInt64;            # the segment's log length in bytes with this record
    }
    catchUp :group {                 # master -> leader: send the records kept for a sleeping
      segment @86 :UInt64;           # copy, from fromSeq on, to `follower`; the reply comes
      follower @87 :ReplicaNode;     # once it holds them durably (NotFound: not all kept)
      fromSeq @88 :UInt64;
    }
  }
}

struct ReplicaNode {
  node @0 :UInt32;
  host @1 :Text;
  port @2 :UInt16;
}

struct ReplicaFailure {
  segment @0 :UInt64;
  node @1 :UInt32;
  message @2 :Text;
}

struct Response {
  status @0 :Status;
  replicaFailures @24 :List(ReplicaFailure);  # commits: followers that did not make the
                                     # writes of a segment led here durable (the master drops
                                     # them from the segment's set before it acknowledges)
  cpuNanos @14 :UInt64;              # thread CPU the node spent on the request since its
                                     # previous reply frame (statement energy accounting)
  incarnation @21 :UInt64;           # random per node process start (a restart may have
                                     # lost commits applied without a sync)
  union {
    none @1 :Void;
    scanBatch :group {
      rows @2 :List(Data);           # encoded rows (common/codec.h)
      keys @3 :List(Data);           # their encoded primary keys (index scans: index key || primary key)
      last @4 :Bool;
      columns @15 :Data;             # fragment scans: the fragment's output (exec/batch_codec.h):
                                     # one batch, or with columnSizes several back to back
      columnSizes @23 :List(UInt32); # the bytes of each batch in `columns`, in order (empty: one)
      resumeKey @16 :Data;           # fragment scans: the last primary key read so far (after
                                     # all of this reply's batches)
      stats @17 :Data;               # fragment scans, last reply: rows, batches, microseconds
                                     # of each operator in the plan's pre-order (varints)
      ownerStats @20 :List(NodeOperatorStats);  # runPlan with analyze, last reply: the
                                     # counters of the fragments below its Exchanges, per owner
      nodeCpu @18 :List(NodeCpu);    # runPlan, last reply: CPU the nodes it read from spent
                                     # for it (its own exchanges' local reads included)
    }
    splitKey @5 :Data;                 # settleSplit: the new segment's low key
    splitKeys @22 :List(Data);        # split: the new segments' low keys, in order
    segmentExport :group {
      meta @6 :SegmentMeta;
      comparator @7 :Text;
      files @8 :List(ExportedFile);
    }
    pulled :group {
      bytes @9 :UInt64;
      files @10 :UInt32;
      micros @11 :UInt64;
    }
    segments @12 :List(SegmentStats);
    committedTs @13 :UInt64;
    updated @19 :UInt64;               # updateKey: rows updated or deleted (0 or 1), each one write prepared
  }
}
