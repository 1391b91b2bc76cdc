#include "powersgd_compressor.hpp"

#include "saved_mean.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gradsweep::strategies {

void orthogonalise_columns(torch::Tensor m) {
  const std::int64_t r = m.size(1);
  for (std::int64_t i = 0; i < r; ++i) {
    torch::Tensor column = m.narrow(1, i, 1);
    // 0 / tiny = 0: a vanished column stays zero, where the hook's plain division would give NaN.
    column.div_(column.norm().clamp_min(1e-30));
    if (i + 1 < r) {
      torch::Tensor rest = m.narrow(1, i + 1, r - i - 1);
      rest.sub_((column * rest).sum(0, true) * column);
    }
  }
}

PowerSgdCompressor::PowerSgdCompressor(const std::vector<torch::Tensor>& params, const PowerSgdSettings& settings)
    : settings_(settings), layout_(params), matrix_of_(params.size(), -1) {
  std::int64_t p_size = 0, q_size = 0, error_size = 0, dense_size = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor& t = params[i];
    if (t.dim() >= 2 && t.numel() >= settings.min_compress_size) {
      const std::int64_t rows = t.size(0), cols = t.numel() / rows;
      const std::int64_t rank = std::min({rows, cols, settings.rank});
      // Only where P and Q are smaller than M: otherwise compressing would send more, and lose accuracy.
      if ((rows + cols) * rank < rows * cols) {
        matrix_of_[i] = static_cast<std::int64_t>(matrices_.size());
        matrices_.push_back({i, rows, cols, rank, p_size, q_size, error_size});
        p_size += rows * rank;
        q_size += cols * rank;
        error_size += rows * cols;
        continue;
      }
    }
    uncompressed_.push_back(i);
    dense_size += t.numel();
  }
  const auto options = params.empty() ? torch::TensorOptions(torch::kFloat) : params.front().options();
  p_ = torch::zeros({p_size}, options);
  q_ = torch::zeros({q_size}, options);
  dense_ = torch::zeros({dense_size}, options);
  error_ = torch::zeros({error_size}, options);
}

torch::Tensor PowerSgdCompressor::m_of(const torch::Tensor& flat, const Matrix& m) const {
  return layout_.slice(flat, m.param).view({m.rows, m.cols});
}

// The same generator and seed on every rank, drawn in parameter order: the ranks start from the same Q
// without a message. A generator of our own leaves the global one (dropout's, the checkpoint's) alone.
void PowerSgdCompressor::initialise_q() {
  at::Generator generator = at::detail::createCPUGenerator(settings_.seed);
  for (const Matrix& m : matrices_)
    q_of(m).copy_(torch::randn({m.cols, m.rank}, generator, torch::TensorOptions(torch::kFloat)));
}

void PowerSgdCompressor::prepare(torch::Tensor& flat) {
  torch::NoGradGuard no_grad;
  if (!started_) {
    initialise_q();
    started_ = true;
  }
  std::int64_t dense_offset = 0;
  for (std::size_t i : uncompressed_) {
    dense_.narrow(0, dense_offset, layout_.numel(i)).copy_(layout_.slice(flat, i));
    dense_offset += layout_.numel(i);
  }
  for (const Matrix& m : matrices_) {
    layout_.slice(flat, m.param).add_(error_of(m));
    // As the hook does: the warm-started Q is re-orthogonalised, so its scale cannot drift over steps.
    torch::Tensor q = q_of(m);
    orthogonalise_columns(q);
    torch::Tensor p = p_of(m);
    torch::mm_out(p, m_of(flat, m), q);
  }
}

void PowerSgdCompressor::after_p_sum(const torch::Tensor& flat) {
  torch::NoGradGuard no_grad;
  // The sum, not the mean: orthogonalisation removes any common scale.
  for (const Matrix& m : matrices_) {
    torch::Tensor p = p_of(m);
    orthogonalise_columns(p);
    torch::Tensor q = q_of(m);
    torch::mm_out(q, m_of(flat, m).t(), p);
  }
}

void PowerSgdCompressor::finish(torch::Tensor& flat, int ranks) {
  torch::NoGradGuard no_grad;
  const double inverse = 1.0 / static_cast<double>(ranks);
  q_.mul_(inverse);
  for (const Matrix& m : matrices_) {
    torch::Tensor input = m_of(flat, m);
    const torch::Tensor approximation = torch::mm(p_of(m), q_of(m).t());
    torch::Tensor error = error_of(m).view({m.rows, m.cols});
    torch::sub_out(error, input, approximation);
    input.copy_(approximation);
  }
  std::int64_t dense_offset = 0;
  for (std::size_t i : uncompressed_) {
    layout_.slice(flat, i).copy_(dense_.narrow(0, dense_offset, layout_.numel(i))).mul_(inverse);
    dense_offset += layout_.numel(i);
  }
}

void PowerSgdCompressor::save(torch::serialize::OutputArchive& archive) const {
  archive.write("powersgd/started", torch::tensor({started_ ? 1 : 0}, torch::kLong));
  archive.write("powersgd/q", q_.cpu());
  archive.write("powersgd/error", error_.cpu());
}

void PowerSgdCompressor::load(torch::serialize::InputArchive& archive) {
  torch::NoGradGuard no_grad;
  torch::Tensor started, q, error;
  archive.read("powersgd/started", started);
  archive.read("powersgd/q", q);
  archive.read("powersgd/error", error);
  if (q.numel() != q_.numel() || error.numel() != error_.numel())
    throw std::runtime_error("powersgd: the checkpoint's Q (" + std::to_string(q.numel()) + " elements) and error (" +
                             std::to_string(error.numel()) + ") do not fit this model and rank (" +
                             std::to_string(q_.numel()) + ", " + std::to_string(error_.numel()) +
                             "): resume with the options it was saved with");
  started_ = started.item<std::int64_t>() != 0;
  q_.copy_(q);
  error_.copy_(error);
}

void PowerSgdCompressor::load_resharded(const std::vector<torch::serialize::InputArchive*>& saved) {
  torch::NoGradGuard no_grad;
  load(*saved.at(0));  // checks the sizes; its error is replaced by the mean
  error_.copy_(saved_mean(saved, "powersgd/error"));
}

}  // namespace gradsweep::strategies
