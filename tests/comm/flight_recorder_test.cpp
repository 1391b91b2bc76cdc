// The flight recorder's ring buffer (wraps, keeps the last N in order, states), the verdict composed from
// the ranks' dumps, and the fingerprints of runtime.check_collectives, in process. The same parts in real
// MPI jobs: comm_test.cpp and tests/strategies/failure_test.cpp.
#include "comm/forensics/collective_fingerprint.hpp"
#include "comm/forensics/collective_forensics.hpp"
#include "comm/forensics/flight_recorder.hpp"
#include "comm/forensics/hang_verdict.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace gradsweep::comm {
namespace {

CallShape allreduce_of(std::int64_t n) {
  CallShape s;
  s.op = CommOp::Allreduce;
  s.reduce = 0;
  s.dtype = static_cast<std::int16_t>(c10::ScalarType::Float);
  s.count = n;
  s.bytes = static_cast<std::uint64_t>(n) * 4;
  return s;
}

TEST(FlightRecorder, KeepsTheLastNInOrderAfterWrapping) {
  FlightRecorder recorder(4);
  for (int i = 1; i <= 10; ++i) recorder.finish(recorder.issue(allreduce_of(i), true), true);
  const auto entries = recorder.entries();
  ASSERT_EQ(entries.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(entries[i].seq, 7 + i);
    EXPECT_EQ(entries[i].shape.count, static_cast<std::int64_t>(7 + i));
    EXPECT_EQ(entries[i].state, CallState::Done);
    EXPECT_GE(entries[i].ended_ns, entries[i].started_ns);
  }
  EXPECT_EQ(recorder.collectives_issued(), 10u);
  EXPECT_EQ(recorder.last_collective_finished(), 10u);
}

TEST(FlightRecorder, HoldsFewerThanCapacityBeforeWrapping) {
  FlightRecorder recorder(8);
  recorder.issue(allreduce_of(1), true);
  recorder.issue(allreduce_of(2), true);
  const auto entries = recorder.entries();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].seq, 1u);
  EXPECT_EQ(entries[1].seq, 2u);
}

TEST(FlightRecorder, StatesFollowTheCall) {
  FlightRecorder recorder(4);
  const auto queued = recorder.issue(allreduce_of(8), false);
  EXPECT_EQ(recorder.entries().back().state, CallState::Issued);
  EXPECT_EQ(recorder.entries().back().started_ns, 0);
  recorder.start(queued);
  EXPECT_EQ(recorder.entries().back().state, CallState::Running);
  recorder.finish(queued, false);
  EXPECT_EQ(recorder.entries().back().state, CallState::Failed);
  {
    FlightRecorder::Scope ok(recorder, allreduce_of(1));
    EXPECT_EQ(recorder.entries().back().state, CallState::Running);
    EXPECT_EQ(ok.seq(), 2u);
  }
  EXPECT_EQ(recorder.entries().back().state, CallState::Done);
  try {
    FlightRecorder::Scope failing(recorder, allreduce_of(1));
    throw std::runtime_error("MPI failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(recorder.entries().back().state, CallState::Failed);
  // Point-to-point calls have their own numbers; collectives keep counting.
  CallShape send;
  send.op = CommOp::Send;
  recorder.issue(send, true);
  EXPECT_EQ(recorder.entries().back().seq, 1u);
  EXPECT_EQ(recorder.collectives_issued(), 3u);
}

TEST(FlightRecorder, AnEntryOverwrittenBeforeItFinishesIsLeftAlone) {
  FlightRecorder recorder(2);
  const auto old = recorder.issue(allreduce_of(1), true);
  recorder.issue(allreduce_of(2), true);
  recorder.issue(allreduce_of(3), true);  // takes old's slot
  recorder.finish(old, true);
  EXPECT_EQ(recorder.entries().back().state, CallState::Running);
}

TEST(FlightRecorder, DescribesCalls) {
  EXPECT_EQ(describe(allreduce_of(1024)), "allreduce of 1024 float32 (4.0 KiB)");
  CallShape b = allreduce_of(10);
  b.op = CommOp::Broadcast;
  b.peer = 3;
  b.ring = false;
  EXPECT_EQ(describe(b), "broadcast of 10 float32 (40 B) from rank 3");
  CallShape barrier;
  EXPECT_EQ(describe(barrier), "barrier");
}

RankProgress waiting(int rank, std::uint64_t seq, const std::string& call) {
  RankProgress p;
  p.rank = rank;
  p.answered = true;
  p.issued = seq;
  p.finished = seq - 1;
  p.waiting_seq = seq;
  p.waiting_in = call;
  return p;
}

TEST(HangVerdict, NamesTheRankBehindAndWhatTheOthersWaitIn) {
  const std::string mb = "allreduce of 300000 float32 (1.1 MiB)";
  const auto v = judge_hang({waiting(0, 184, mb), waiting(1, 184, mb), waiting(2, 183, mb), waiting(3, 184, mb)});
  EXPECT_EQ(v.summary, "rank 2 did not finish allreduce #183");
  EXPECT_EQ(v.message, "rank 2 did not finish allreduce #183: rank 2 finished #182 and waits in " + mb +
                           " #183; ranks 0,1,3 finished #183 and wait in " + mb + " #184");
}

TEST(HangVerdict, ARankThatDoesNotAnswerIsTheOneBehind) {
  RankProgress stopped;
  stopped.rank = 1;
  const auto v = judge_hang({waiting(0, 7, "allreduce of 4 float32 (16 B)"), stopped});
  EXPECT_EQ(v.summary, "rank 1 did not finish allreduce #7");
  EXPECT_NE(v.message.find("rank 1 did not answer (stopped, or dead)"), std::string::npos) << v.message;
}

TEST(HangVerdict, ARankOutsideAnyCollectiveIsBehindTheRanksInside) {
  RankProgress idle;
  idle.rank = 1;
  idle.answered = true;
  idle.issued = idle.finished = 1;
  const auto v = judge_hang({waiting(0, 2, "allreduce of 4 float32 (16 B)"), idle});
  EXPECT_EQ(v.summary, "rank 1 did not finish allreduce #2");
  EXPECT_NE(v.message.find("rank 1 is not in any collective (finished #1"), std::string::npos) << v.message;
}

// runtime.check_collectives: the others wait in the check before #63, outside the collective itself.
TEST(HangVerdict, SilentRankWhileTheOthersAreOutsideCollectives) {
  RankProgress idle;
  idle.rank = 0;
  idle.answered = true;
  idle.issued = idle.finished = 62;
  RankProgress stopped;
  stopped.rank = 1;
  EXPECT_EQ(judge_hang({idle, stopped}).summary, "rank 1 did not finish collective #63");
}

TEST(HangVerdict, RanksInDifferentCallsOfTheSameNumberDisagree) {
  const auto v = judge_hang({waiting(0, 2, "allreduce of 4 float32 (16 B)"), waiting(1, 2, "barrier")});
  EXPECT_EQ(v.summary, "ranks disagree on collective #2: rank 0 allreduce of 4 float32 (16 B); rank 1 barrier");
}

// Issue 27: who the waiting ranks point at. A ring of 4 whose rank 1 never sent: rank 2 waits on it in a
// receive, ranks 0 and 3 went on to the allreduce. By position ranks 1 and 2 both look late; the wait names 1.
TEST(HangVerdict, TheRankTheWaitersPointAtIsTheOneBehind) {
  const std::string call = "allreduce of 4 float32 (16 B)";
  RankProgress idle;
  idle.rank = 1;
  idle.answered = true;
  RankProgress receiving = idle;
  receiving.rank = 2;
  receiving.waiting_on = {1};
  const auto v = judge_hang({waiting(0, 1, call), idle, receiving, waiting(3, 1, call)});
  EXPECT_EQ(v.summary, "rank 1 did not finish allreduce #1");
  EXPECT_NE(v.message.find("rank 2 waits on rank 1"), std::string::npos) << v.message;
  receiving.waiting_on.clear();
  EXPECT_EQ(judge_hang({waiting(0, 1, call), idle, receiving, waiting(3, 1, call)}).summary,
            "ranks 1,2 did not finish allreduce #1")
      << "without the waits, the ring neighbour looks late too";
}

// A link cut both ways inside a ring allreduce: every rank is in the same collective, so the numbers say
// nothing; rank 2 waits on both neighbours, both wait on it, and rank 0 waits on rank 3.
TEST(HangVerdict, ACutLinkIsNamedByTheRanksThatWaitOnIt) {
  const std::string call = "ring allreduce of 1024 float32 (4.0 KiB)";
  std::vector<RankProgress> ranks{waiting(0, 5, call), waiting(1, 5, call), waiting(2, 5, call), waiting(3, 5, call)};
  EXPECT_EQ(judge_hang(ranks).summary, "every rank waits in ring allreduce #5");
  ranks[0].waiting_on = {3};
  ranks[1].waiting_on = {2};
  ranks[2].waiting_on = {1, 3};
  ranks[3].waiting_on = {2};
  EXPECT_EQ(judge_hang(ranks).summary, "rank 2 did not finish ring allreduce #5");
  EXPECT_EQ(blamed_by_waits(ranks), std::vector<int>{2});
}

// A stopped rank (SIGSTOP) answers nothing; the neighbour that waits on it agrees with the silence.
TEST(HangVerdict, AStoppedRankPointedAtIsTheOneBehind) {
  const std::string call = "ring allreduce of 1024 float32 (4.0 KiB)";
  RankProgress stopped;
  stopped.rank = 1;
  std::vector<RankProgress> ranks{waiting(0, 3, call), stopped, waiting(2, 3, call)};
  ranks[2].waiting_on = {1};
  EXPECT_EQ(judge_hang(ranks).summary, "rank 1 did not finish ring allreduce #3");
  EXPECT_EQ(blamed_by_waits(ranks), std::vector<int>{1});
}

// A rank that waits in a collective is not blamed for the receives that wait on it (a parameter server
// in a barrier while a worker waits for its answer): the positions decide.
TEST(HangVerdict, ARankInsideACollectiveIsNotBlamedByWaitsAlone) {
  RankProgress worker;
  worker.rank = 1;
  worker.answered = true;
  worker.issued = worker.finished = 2;
  worker.waiting_on = {0};
  EXPECT_TRUE(blamed_by_waits({waiting(0, 3, "barrier"), worker}).empty());
  EXPECT_EQ(judge_hang({waiting(0, 3, "barrier"), worker}).summary, "rank 1 did not finish barrier #3");
}

TEST(Fingerprint, FirstMismatchNamesBothSides) {
  std::vector<Fingerprint> all{fingerprint_of(12, allreduce_of(1024)), fingerprint_of(12, allreduce_of(1024))};
  EXPECT_FALSE(first_mismatch(all));
  all.push_back(fingerprint_of(12, allreduce_of(1000)));
  EXPECT_EQ(first_mismatch(all).value_or(""),
            "rank 2 issued allreduce of 1000 float32 sum where rank 0 issued allreduce of 1024 float32 sum, "
            "collective #12");
  CallShape barrier;
  all[1] = fingerprint_of(12, barrier);
  EXPECT_EQ(first_mismatch(all).value_or(""),
            "rank 1 issued barrier where rank 0 issued allreduce of 1024 float32 sum, collective #12");
}

TEST(Forensics, DumpsAreWrittenAndReadBack) {
  const auto dir = test::scratch_dir();
  forensics::set_directory(dir, 0);
  CollectiveForensics f("mpi");
  f.set_rank(0, 2);
  f.recorder().finish(f.recorder().issue(allreduce_of(4), true), true);
  f.recorder().issue(allreduce_of(8), true);
  ASSERT_TRUE(f.dump("test"));
  const auto ranks = read_dumps(dir / "flight-recorder", 2);
  forensics::set_directory({}, 0);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_TRUE(ranks[0].answered);
  EXPECT_EQ(ranks[0].issued, 2u);
  EXPECT_EQ(ranks[0].finished, 1u);
  EXPECT_EQ(ranks[0].waiting_seq.value_or(0), 2u);
  EXPECT_EQ(ranks[0].waiting_in, "allreduce of 8 float32 (32 B)");
  EXPECT_FALSE(ranks[1].answered);
  const std::string text = test::read_text(dir / "flight-recorder" / "rank-0.json");
  EXPECT_NE(text.find("\"state\": \"running\""), std::string::npos) << text;
}

}  // namespace
}  // namespace gradsweep::comm
