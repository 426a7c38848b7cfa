#include "train/checkpoint.h"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/check.h"
#include "core/fs.h"
#include "io/torch_pt.h"

namespace oc {

using io::PyValue;

namespace {
std::vector<size_t> group_order(const ParamTable& t, const std::vector<bool>& trainable, bool decay) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < t.params.size(); ++i)
    if ((trainable.empty() || trainable[i]) && t.params[i].decay == decay) idx.push_back(i);
  return idx;
}

PyValue param_group(const std::vector<int64_t>& ids, const AdamWCfg& c, double wd, double lr) {
  PyValue g = PyValue::new_dict();
  g.set("lr", PyValue::real(lr));
  g.set("betas", PyValue::tuple({PyValue::real(c.beta1), PyValue::real(c.beta2)}));
  g.set("eps", PyValue::real(c.eps));
  g.set("weight_decay", PyValue::real(wd));
  g.set("amsgrad", PyValue::boolean(false));
  g.set("foreach", PyValue::none());
  g.set("maximize", PyValue::boolean(false));
  g.set("capturable", PyValue::boolean(false));
  std::vector<PyValue> p;
  for (int64_t i : ids) p.push_back(PyValue::integer(i));
  g.set("params", PyValue::list(std::move(p)));
  return g;
}

// A resume counter: absent = 0; anything but a non-negative int is refused, naming the file
// (a checkpoint with epoch = -5 would otherwise train with a negative learning rate).
int64_t get_count(const PyValue& d, const char* key, const std::string& path, const char* where) {
  const PyValue* v = d.get(key);
  if (!v) return 0;
  if (!v->is(io::PyKind::Int))
    OC_USER_ERROR("{}: {}'{}' is a {}, not an integer; the checkpoint is damaged and cannot be resumed", path, where,
                  key, io::py_kind_name(v->kind));
  if (v->i < 0)
    OC_USER_ERROR("{}: {}'{}' is {}, it must be >= 0; the checkpoint is damaged and cannot be resumed", path, where,
                  key, v->i);
  return v->i;
}
}  // namespace

void save_checkpoint(const std::string& path, const Clip& model, const AdamW& opt, const std::vector<bool>& trainable,
                     const std::string& run_name, const ResumeState& st, bool ddp_prefix) {
  const ParamTable& t = model.table();
  NamedTensors sd = state_dict_copy(model);
  if (ddp_prefix)
    for (auto& [k, _] : sd) k = "module." + k;

  // torch's optimizer state_dict numbers parameters across groups in group order: group 0
  // = no decay, group 1 = decay (OpenCLIP's order).
  const auto g0 = group_order(t, trainable, false), g1 = group_order(t, trainable, true);
  PyValue state = PyValue::new_dict();
  std::vector<int64_t> ids0, ids1;
  int64_t next = 0;
  // A moment of one parameter, copied out of the optimizer backend's memory.
  auto moment = [&](const float* arena, const ParamInfo& p) {
    return PyValue::from_tensor(param_to_host(opt.backend(), arena, p));
  };
  auto add_state = [&](size_t pi, std::vector<int64_t>& ids) {
    const ParamInfo& p = t.params[pi];
    PyValue s = PyValue::new_dict();
    s.set("step", PyValue::from_tensor(HostTensor::from_f32({}, std::vector<float>{float(opt.steps())})));
    s.set("exp_avg", moment(opt.exp_avg(), p));
    s.set("exp_avg_sq", moment(opt.exp_avg_sq(), p));
    if (opt.steps() > 0) state.set(PyValue::integer(next), std::move(s));
    ids.push_back(next++);
  };
  for (size_t i : g0) add_state(i, ids0);
  for (size_t i : g1) add_state(i, ids1);
  PyValue optimizer = PyValue::new_dict();
  optimizer.set("state", std::move(state));
  optimizer.set("param_groups", PyValue::list({param_group(ids0, opt.cfg(), 0.0, opt.cfg().lr),
                                                 param_group(ids1, opt.cfg(), opt.cfg().wd, opt.cfg().lr)}));

  PyValue extras = PyValue::new_dict();
  extras.set("format", PyValue::integer(1));
  extras.set("step_in_epoch", PyValue::integer(st.step_in_epoch));
  extras.set("global_step", PyValue::integer(st.global_step));
  extras.set("samples_seen", PyValue::integer(st.samples_seen));
  extras.set("bad_steps", PyValue::integer(st.bad_steps));
  extras.set("patch_dropout_draws", PyValue::integer(st.patch_dropout_draws));
  extras.set("loader_state", PyValue::str(st.loader_state));
  extras.set("model_config", PyValue::str(model_config_json(model.cfg())));

  PyValue ck = PyValue::new_dict();
  ck.set("epoch", PyValue::integer(st.completed_epochs));
  ck.set("name", PyValue::str(run_name));
  ck.set("state_dict", io::make_state_dict(std::move(sd)));
  ck.set("optimizer", std::move(optimizer));
  ck.set("global_step", PyValue::integer(st.global_step));
  ck.set("samples_seen", PyValue::integer(st.samples_seen));
  ck.set("openclip_cpp", std::move(extras));
  io::save_pt(path, ck);
}

Checkpoint load_checkpoint(const std::string& path) {
  Checkpoint ck;
  auto pt = io::load_pt(path);
  if (!pt) OC_USER_ERROR("{}", pt.error());
  const PyValue& root = pt.value();
  auto sd = io::extract_state_dict(root);
  if (!sd) OC_USER_ERROR("{}: {}", path, sd.error());
  for (auto& [k, rec] : sd.value()) ck.state_dict.emplace_back(k, rec->data);
  if (!root.is(io::PyKind::Dict) || !root.get("epoch")) return ck;
  ck.has_epoch = true;
  ck.state.completed_epochs = get_count(root, "epoch", path, "");
  if (const PyValue* n = root.get("name"); n && n->is(io::PyKind::Str)) ck.name = n->s;
  if (const PyValue* e = root.get("openclip_cpp"); e && e->is(io::PyKind::Dict)) {
    ck.has_extras = true;
    const char* in = "openclip_cpp.";
    ck.state.step_in_epoch = get_count(*e, "step_in_epoch", path, in);
    ck.state.global_step = get_count(*e, "global_step", path, in);
    ck.state.samples_seen = get_count(*e, "samples_seen", path, in);
    ck.state.bad_steps = get_count(*e, "bad_steps", path, in);
    ck.state.patch_dropout_draws = get_count(*e, "patch_dropout_draws", path, in);  // absent before: 0
    if (const PyValue* l = e->get("loader_state"); l && l->is(io::PyKind::Str)) ck.state.loader_state = l->s;
    else if (l) OC_USER_ERROR("{}: openclip_cpp.loader_state is a {}, not a str", path, io::py_kind_name(l->kind));
    if (ck.state.step_in_epoch > 0 && ck.state.global_step == 0)
      OC_USER_ERROR("{}: openclip_cpp.step_in_epoch is {} but global_step is 0; the checkpoint is damaged", path,
                    ck.state.step_in_epoch);
  }
  const PyValue* opt = root.get("optimizer");
  if (!opt || !opt->is(io::PyKind::Dict)) return ck;
  const PyValue* groups = opt->get("param_groups");
  const PyValue* state = opt->get("state");
  if (!groups || !groups->is(io::PyKind::List) || !state || !state->is(io::PyKind::Dict))
    OC_USER_ERROR("{}: 'optimizer' has no param_groups/state", path);
  ck.has_optimizer = true;
  // Map optimizer indices back to names: OpenCLIP's group order is [no-decay, decay], each in
  // named_parameters order; the state_dict lists the names in that same order.
  std::vector<std::string> no_decay, decay;
  for (auto& [k, rec] : sd.value()) {
    const bool nd = rec->data.shape.size() < 2 || k.find("bn") != std::string::npos || k.find("ln") != std::string::npos ||
                    k.find("bias") != std::string::npos || k.find("logit_scale") != std::string::npos;
    (nd ? no_decay : decay).push_back(k);
  }
  std::vector<std::string> by_index;
  for (size_t gi = 0; gi < groups->items.size(); ++gi) {
    const PyValue* ids = groups->items[gi].get("params");
    if (!ids || !ids->is(io::PyKind::List)) OC_USER_ERROR("{}: param group {} has no 'params'", path, gi);
    const auto& names = gi == 0 ? no_decay : decay;
    // Frozen parameters are absent from the groups: they are the ones OpenCLIP skipped; we
    // can only map by position when the group is complete.
    if (ids->items.size() != names.size()) {
      ck.has_optimizer = false;
      return ck;
    }
    for (size_t j = 0; j < ids->items.size(); ++j) {
      if (size_t(ids->items[j].i) >= by_index.size()) by_index.resize(size_t(ids->items[j].i) + 1);
      by_index[size_t(ids->items[j].i)] = names[j];
    }
  }
  for (auto& [key, s] : state->dict) {
    if (!key.is(io::PyKind::Int) || size_t(key.i) >= by_index.size())
      OC_USER_ERROR("{}: optimizer state key {} is not a parameter index", path, key.repr());
    const PyValue* m = s.get("exp_avg");
    const PyValue* v = s.get("exp_avg_sq");
    const PyValue* step = s.get("step");
    if (!m || !v || !m->is(io::PyKind::Tensor) || !v->is(io::PyKind::Tensor))
      OC_USER_ERROR("{}: optimizer state {} lacks exp_avg/exp_avg_sq", path, key.i);
    if (step) ck.optimizer_step = step->is(io::PyKind::Tensor) ? int64_t(step->tensor->data.to_f32()[0]) : step->i;
    ck.moments.push_back({by_index[size_t(key.i)], {m->tensor->data, v->tensor->data}});
  }
  return ck;
}

void restore_checkpoint(const Checkpoint& ck, Clip& model, AdamW* opt, const std::string& where) {
  load_state_dict(model, ck.state_dict, where);
  if (!opt || !ck.has_optimizer) return;
  for (auto& [name, mv] : ck.moments) {
    const ParamInfo* p = model.table().find(name);
    if (!p) OC_USER_ERROR("{}: optimizer state for unknown parameter {}", where, name);
    if (mv.first.numel() != int64_t(p->numel) || mv.second.numel() != int64_t(p->numel))
      OC_USER_ERROR("{}: optimizer state of {} has shape {} but the parameter is {}", where, name,
                    shape_str(mv.first.shape), shape_str(p->shape));
    auto m = mv.first.to_f32(), v = mv.second.to_f32();
    opt->backend().copy_from_host(opt->exp_avg() + p->offset, m.data(), sizeof(float) * p->numel);
    opt->backend().copy_from_host(opt->exp_avg_sq() + p->offset, v.data(), sizeof(float) * p->numel);
  }
  opt->set_steps(ck.optimizer_step);
}

namespace {
// Natural sort key: digit runs compare as numbers ("epoch_10" after "epoch_9").
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(uint8_t(a[i])) && std::isdigit(uint8_t(b[j]))) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(uint8_t(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(uint8_t(b[j2]))) ++j2;
      unsigned long long x = std::stoull(a.substr(i, i2 - i)), y = std::stoull(b.substr(j, j2 - j));
      if (x != y) return x < y;
      i = i2, j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

void collect_pt(const std::string& dir, std::vector<std::string>* out) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) return;
  while (dirent* e = readdir(d.get())) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    std::string p = fs::join(dir, n);
    if (fs::is_dir(p)) collect_pt(p, out);
    else if (n.size() > 3 && n.compare(n.size() - 3, 3, ".pt") == 0) out->push_back(p);
  }
}
}  // namespace

std::string find_latest_checkpoint(const std::string& dir, bool save_most_recent) {
  if (save_most_recent) {
    std::string p = fs::join(dir, "epoch_latest.pt");
    return fs::exists(p) ? p : "";
  }
  std::vector<std::string> all;
  collect_pt(dir, &all);
  if (all.empty()) return "";
  std::sort(all.begin(), all.end(), natural_less);
  return all.back();
}

std::vector<std::string> prune_step_checkpoints(const std::string& dir, int keep) {
  std::vector<std::string> deleted;
  if (keep <= 0) return deleted;
  std::vector<std::pair<long long, std::string>> steps;  // global step, file
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) return deleted;
  while (dirent* e = readdir(d.get())) {
    long long epoch = 0, step = 0;
    int used = 0;
    const std::string n = e->d_name;
    if (std::sscanf(n.c_str(), "epoch_%lld_step_%lld.pt%n", &epoch, &step, &used) == 2 && size_t(used) == n.size())
      steps.emplace_back(step, n);
  }
  std::sort(steps.begin(), steps.end());
  for (size_t i = 0; i + size_t(keep) < steps.size(); ++i) {
    const std::string p = fs::join(dir, steps[i].second);
    if (std::remove(p.c_str()) == 0) deleted.push_back(p);
  }
  return deleted;
}

}  // namespace oc
