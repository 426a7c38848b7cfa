#include "train/optimizer_step.h"

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "core/log.h"
#include "ops/adamw.h"
#include "train/freeze.h"

namespace oc {

namespace {
// --siglip: SigLipLoss; otherwise ClipLoss in the --local-loss / --gather-with-grad /
// --global-batch-gradient mode. It sees the step's accum_freq * batch_size rows.
std::unique_ptr<Loss> make_loss(TrainSession& s) {
  const TrainArgs& a = s.a;
  Clip& model = *s.learner.model;
  const int64_t rows = int64_t(a.accum_freq) * a.batch_size;
  if (a.siglip) return std::make_unique<SigLipLoss>(model, *s.cluster.comm, rows);
  return std::make_unique<ClipLoss>(model, *s.cluster.comm, rows,
                                    ClipLoss::Mode{a.local_loss, a.gather_with_grad, a.global_batch_gradient});
}
}  // namespace

TrainStep::TrainStep(TrainSession& s, const FaultHooks& faults)
    : s_(s), faults_(faults), loss_(make_loss(s)),
      plan_(make_step_plan(*s.learner.model, *loss_, s.a.batch_size, s.a.accum_freq)) {
  const TrainArgs& a = s.a;
  const int world_size = s.cluster.size;
  if (world_size <= 1) return;
  reducer_ = std::make_unique<GradAllReduce>(*s.learner.model, *s.cluster.comm);
  // The block hooks start a block's all-reduce after its backward (OPENCLIP_DIST_NO_OVERLAP:
  // never); with accumulation that would be after the first of K passes, so every bucket is
  // reduced once, after the last.
  reducer_->set_overlap(std::getenv("OPENCLIP_DIST_NO_OVERLAP") == nullptr && plan_->one_backward_pass());
  const std::string accum = a.accum_freq > 1 ? fmt::format(" x {} accumulated", a.accum_freq) : "";
  log::info("Data parallel: {} ranks x batch {}{} = global batch {}; loss: {}{}; gradient all-reduce in buckets of "
            "one block (largest {:.1f} MiB) overlapped with backward, dist timeout {:g} s",
            world_size, a.batch_size, accum, int64_t(world_size) * a.batch_size * a.accum_freq,
            a.siglip ? "sigmoid (SigLIP, neighbour exchange)" : a.local_loss ? "local" : "global",
            a.gather_with_grad ? ", gather with grad" : (a.global_batch_gradient ? ", global-batch gradient" : ""),
            reducer_->bucket_mib_max(), a.dist_timeout);
}

double TrainStep::all_reduce(double loss, int64_t step, int signal) {
  reducer_->finish();
  // Every rank must take the same decision on a non-finite step and on a stop signal, so
  // the sum of the losses is agreed; the LOGGED loss stays this rank's own, as OpenCLIP
  // logs rank 0's (with --local-loss, its rows only).
  double ls[2] = {loss, double(signal)};
  s_.cluster.comm->allreduce_sum(ls, 2);
  if (!std::isfinite(ls[0])) loss = ls[0];
  if (ls[1] != 0) agreed_stop_ = signal ? signal : SIGTERM;
  if (faults_.print_rank_loss())
    std::fprintf(stderr, "debug: rank %d step %lld loss %.9g\n", s_.cluster.rank, (long long)step, loss);
  return loss;
}

StepOutcome TrainStep::run(StepBatches& batches, int64_t step, double lr, int signal, ResumeState* st) {
  const TrainArgs& a = s_.a;
  Learner& l = s_.learner;
  Clip& model = *l.model;
  faults_.before_step(step, model.backend(), l.logit_scale);
  s_.cluster.comm->set_step(step);
  StepOutcome out;
  out.loss = plan_->forward_backward(batches.step());
  batches.take_ahead();  // backward is queued: the next step's uploads overlap what is left of it
  if (s_.cluster.size > 1) out.loss = all_reduce(out.loss, step, signal);
  batches.recycle_step();  // reuse the batch buffers
  mask_frozen_grads(model, l.trainable);
  const double gnorm = clip_grad_norm(model.backend(), model.grads(), model.table(), a.grad_clip_norm);
  out.scale = std::exp(model.logit_scale());
  if (!std::isfinite(out.loss) || !std::isfinite(gnorm)) {
    ++st->bad_steps;
    log::warn("Non-finite {} at step {} (loss {}, grad norm {}): update skipped ({} in a row)",
              std::isfinite(out.loss) ? "gradient" : "loss", step, out.loss, gnorm, st->bad_steps);
    if (st->bad_steps >= a.max_bad_steps) {
      log::error("{} non-finite steps in a row (--max-bad-steps): stopping; the last checkpoint is intact",
                 st->bad_steps);
      out.give_up = true;
    }
    return out;
  }
  st->bad_steps = 0;
  l.opt->step(model.params(), model.grads(), lr, l.trainable);
  clamp_logit_scale(model.backend(), l.logit_scale);
  round_lp_params(model.backend(), model.table(), model.params(), l.precision);  // bf16 / pure_bf16
  return out;
}

}  // namespace oc
