#include "train/step_log.h"

#include <algorithm>
#include <string>

#include "core/log.h"
#include "core/progress.h"

namespace oc {

namespace {
std::string fmt_g(double v) { return fmt::format("{:#g}", v); }
}  // namespace

void StepLogger::log(int64_t step, int64_t i_accum, int64_t batch_i, double lr, double loss, double scale,
                     const StepTimes& t) {
  data_.add(t.data), batch_.add(t.batch);
  s_.step_rate.add(t.batch);
  // OpenCLIP: batch_count == num_batches_per_epoch (num_batches // accum_freq) also logs the
  // epoch's last step when the batches are not a multiple of --accum-freq (the rest is dropped).
  if (i_accum % s_.a.log_every_n_steps == 0 || i_accum + 1 == s_.feed.steps_per_epoch) {
    line(step, i_accum, batch_i, lr, loss, scale, t);
    data_ = {}, batch_ = {};
  }
  progress(step, i_accum, batch_i, loss, t);
}

int64_t StepLogger::steps_left(int64_t step) const {
  const int64_t total = s_.plan_end > 0 ? s_.plan_end : s_.a.epochs * s_.feed.steps_per_epoch;
  return std::max<int64_t>(0, total - step - 1);
}

// As OpenCLIP's train_one_epoch: the loss meter is updated at logged steps only ("coarsely
// sampled"), the text line shows the window's average data/batch times, and samples/s and
// the TensorBoard scalars use the last step's values.
void StepLogger::line(int64_t step, int64_t i_accum, int64_t batch_i, double lr, double loss, double scale,
                      const StepTimes& t) {
  const TrainArgs& a = s_.a;
  const Feed& f = s_.feed;
  const int world_size = s_.cluster.size;
  loss_.add(loss);
  const int64_t samples = batch_i * a.batch_size * world_size;
  const double sps = double(a.batch_size) * a.accum_freq * world_size / t.batch;
  const double sps_rank = sps / world_size;
  // The whole run's remaining time (to the end of the last epoch, or of TrainArgs::replan's
  // plan) at the smoothed step time (core/step_rate.h).
  const double eta = s_.step_rate.eta(steps_left(step));
  log::info("Train Epoch: {} [{:>{}}/{} ({:.0f}%)] Data (t): {:.3f} Batch (t): {:.3f}, {}/s, {}/s/gpu LR: {:5f} "
            "Logit Scale: {:.3f} Contrastive_loss: {:#.5g} ({:#.5g}) Loss: {:#.5g} ({:#.5g}) ETA: {:.0f}s",
            epoch_, samples, std::to_string(f.samples_per_epoch).size(), f.samples_per_epoch,
            100.0 * double(i_accum + 1) / double(f.steps_per_epoch), data_.avg(), batch_.avg(), fmt_g(sps), fmt_g(sps_rank), lr,
            scale, loss, loss_.avg(), loss, loss_.avg(), eta);
  if (io::EventWriter* tb = s_.tb.get()) {
    tb->add_scalar("train/data_time", float(t.data), step);
    tb->add_scalar("train/batch_time", float(t.batch), step);
    tb->add_scalar("train/samples_per_second", float(sps), step);
    tb->add_scalar("train/samples_per_second_per_gpu", float(sps_rank), step);
    tb->add_scalar("train/scale", float(scale), step);
    tb->add_scalar("train/lr", float(lr), step);
    tb->add_scalar("train/contrastive_loss", float(loss), step);
    tb->add_scalar("train/loss", float(loss), step);
  }
}

void StepLogger::progress(int64_t step, int64_t i_accum, int64_t batch_i, double loss, const StepTimes& t) const {
  const int64_t n = s_.feed.num_batches;
  const int width = 30, done = int(width * batch_i / std::max<int64_t>(1, n));
  const int64_t epoch_left = std::max<int64_t>(0, s_.feed.steps_per_epoch - i_accum - 1);
  log::progress(fmt::format("epoch {} [{}{}] {}/{} loss {:.4f} {:.1f} samples/s ETA epoch {} run {}", epoch_,
                            std::string(size_t(done), '='), std::string(size_t(width - done), ' '), batch_i, n, loss,
                            double(s_.a.batch_size) * s_.a.accum_freq / std::max(1e-9, t.batch),
                            format_duration(s_.step_rate.eta(epoch_left)),
                            format_duration(s_.step_rate.eta(steps_left(step)))));
}

}  // namespace oc
