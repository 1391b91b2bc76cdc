#include "train/rank_report.hpp"

#include <gradsweep/sdk/status.hpp>

#include <torch/torch.h>

#include <stdexcept>

namespace gradsweep::train {
namespace {

constexpr int kReportFields = 9;

torch::Tensor gather(comm::HostCommunicator& comm, const torch::Tensor& mine) {
  torch::Tensor all = torch::empty({mine.numel() * comm.size()}, mine.options());
  sdk::check(comm.allgather(mine, all));
  comm.take_stats();  // the trainer's bookkeeping, not the strategy's traffic
  return all.view({comm.size(), mine.numel()});
}

}  // namespace

StepReport gather_step_report(comm::HostCommunicator& comm, const RankStep& mine) {
  const comm::CommStats& c = mine.comm;
  const torch::Tensor local =
      torch::tensor({mine.computes ? 1.0 : 0.0, mine.loss_sum, mine.loss_count, static_cast<double>(c.bytes_sent),
                     static_cast<double>(c.bytes_received), c.seconds, c.blocked_seconds,
                     static_cast<double>(c.payload_bytes), static_cast<double>(c.calls)},
                    torch::kDouble);
  static_assert(kReportFields == 9);
  const torch::Tensor all = comm.size() == 1 ? local.view({1, kReportFields}) : gather(comm, local);
  const auto a = all.accessor<double, 2>();
  StepReport report;
  double sum = 0.0, count = 0.0;
  for (int r = 0; r < comm.size(); ++r) {
    RankStep s;
    s.computes = a[r][0] != 0.0;
    s.loss_sum = a[r][1];
    s.loss_count = a[r][2];
    s.comm.bytes_sent = static_cast<std::uint64_t>(a[r][3]);
    s.comm.bytes_received = static_cast<std::uint64_t>(a[r][4]);
    s.comm.seconds = a[r][5];
    s.comm.blocked_seconds = a[r][6];
    s.comm.payload_bytes = static_cast<std::uint64_t>(a[r][7]);
    s.comm.calls = static_cast<std::uint64_t>(a[r][8]);
    sum += s.loss_sum;
    count += s.loss_count;
    report.ranks.push_back(s);
  }
  report.mean_loss = count > 0 ? sum / count : 0.0;
  return report;
}

ComputeGroup compute_group(comm::HostCommunicator& comm, bool computes) {
  const torch::Tensor mine = torch::tensor({computes ? 1 : 0}, torch::kInt);
  const torch::Tensor all = comm.size() == 1 ? mine.view({1, 1}) : gather(comm, mine);
  ComputeGroup group{0, 0};
  for (int r = 0; r < comm.size(); ++r) {
    if (all[r][0].item<int>() == 0) continue;
    if (r < comm.rank()) ++group.index;
    ++group.count;
  }
  if (group.count == 0)
    throw std::runtime_error("the strategy left no rank computing gradients (every rank only serves)");
  return group;
}

}  // namespace gradsweep::train
