// SPDX-License-Identifier: MIT
// Recorded PyTorch operators as trnsim compute ops. The table is in docs/traces-from-pytorch.md.
#include "trnsim/trace/torch_ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <numeric>
#include <set>

#include "trnsim/error.hpp"

namespace trnsim::trace {

namespace {

using Shape = std::vector<std::int64_t>;

// ---- Python literals ----------------------------------------------------------------------------

class Literal {
 public:
  Literal(std::string_view s, const std::string& where) : s_(s), where_(where) {}

  Json parse() {
    Json v = value(0);
    skip();
    if (pos_ != s_.size()) fail("unexpected text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    throw TraceError(fmt::format("{}: {} at character {} of \"{}\"", where_, what, pos_,
                                 s_.size() > 80 ? std::string(s_.substr(0, 80)) + "..."
                                                : std::string(s_)));
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  Json value(int depth) {
    if (depth > 64) fail("lists nested too deeply");
    skip();
    if (pos_ >= s_.size()) fail("the text ends where a value was expected");
    const char c = s_[pos_];
    if (c == '[' || c == '(') {
      const char close = c == '[' ? ']' : ')';
      ++pos_;
      Json out = Json::array();
      skip();
      if (pos_ < s_.size() && s_[pos_] == close) {
        ++pos_;
        return out;
      }
      for (;;) {
        out.push_back(value(depth + 1));
        skip();
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          skip();
          if (pos_ < s_.size() && s_[pos_] == close) {
            ++pos_;
            return out;
          }
          continue;
        }
        if (pos_ < s_.size() && s_[pos_] == close) {
          ++pos_;
          return out;
        }
        fail("expected ',' or the end of a list");
      }
    }
    if (c == '\'' || c == '"') {
      ++pos_;
      std::string out;
      while (pos_ < s_.size() && s_[pos_] != c) {
        if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
        out.push_back(s_[pos_++]);
      }
      if (pos_ >= s_.size()) fail("unterminated string");
      ++pos_;
      return out;
    }
    if (word("True")) return true;
    if (word("False")) return false;
    if (word("None")) return nullptr;
    if (word("inf")) return std::numeric_limits<double>::infinity();
    if (word("-inf")) return -std::numeric_limits<double>::infinity();
    if (word("nan")) return nullptr;
    const std::size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) ||
                                s_[pos_] == '-' || s_[pos_] == '+' || s_[pos_] == '.')) {
      ++pos_;
    }
    const std::string num(s_.substr(start, pos_ - start));
    if (num.empty()) fail("expected a value");
    try {
      std::size_t used = 0;
      if (num.find_first_of(".eE") == std::string::npos) {
        const long long v = std::stoll(num, &used);
        if (used == num.size()) return v;
      } else {
        const double v = std::stod(num, &used);
        if (used == num.size()) return v;
      }
    } catch (const std::exception&) {
    }
    return num;  // an unquoted token (e.g. a device name): kept as text
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  const std::string& where_;
};

// ---- arguments ----------------------------------------------------------------------------------

bool is_tensor(const TorchArg& a) { return a.type.starts_with("Tensor("); }

bool is_int_list(const Json& j) {
  if (!j.is_array()) return false;
  return std::all_of(j.begin(), j.end(), [](const Json& x) { return x.is_number_integer(); });
}

// The shape of tensor argument i, or none.
std::optional<Shape> shape_of(const std::vector<TorchArg>& args, std::size_t i) {
  if (i >= args.size() || !is_tensor(args[i]) || !is_int_list(args[i].shape)) return {};
  Shape s;
  for (const auto& x : args[i].shape) {
    const auto v = x.get<std::int64_t>();
    if (v < 0) return {};
    s.push_back(v);
  }
  return s;
}

std::uint64_t numel(const Shape& s) {
  std::uint64_t n = 1;
  for (auto v : s) n *= static_cast<std::uint64_t>(v);
  return n;
}

// PyTorch's dtype names (as the ET writes them inside Tensor(...)) to trnsim's. Types trnsim has
// no engine format for (double, integers, bool) run as fp32 element work.
DType dtype_of_type(std::string_view type) {
  const auto open = type.find('(');
  const auto close = type.rfind(')');
  std::string_view t = open == std::string_view::npos || close == std::string_view::npos
                           ? type
                           : type.substr(open + 1, close - open - 1);
  if (t.starts_with("c10::")) t.remove_prefix(5);
  if (t == "BFloat16") return DType::bf16;
  if (t == "Half") return DType::fp16;
  if (t.starts_with("Float8")) return DType::fp8;
  return DType::fp32;
}

DType dtype_of(const std::vector<TorchArg>& args, std::size_t i) {
  return i < args.size() ? dtype_of_type(args[i].type) : DType::fp32;
}

std::optional<bool> bool_arg(const std::vector<TorchArg>& args, std::size_t i) {
  if (i >= args.size()) return {};
  if (args[i].value.is_boolean()) return args[i].value.get<bool>();
  if (args[i].value.is_number_integer()) return args[i].value.get<std::int64_t>() != 0;
  return {};
}

// Elements of all tensors of a tensor-list argument (optimizer foreach ops).
std::uint64_t list_numel(const TorchArg& a) {
  if (!a.type.starts_with("GenericList[") || !a.shape.is_array()) return 0;
  std::uint64_t n = 0;
  for (const auto& s : a.shape) {
    if (!is_int_list(s)) continue;
    std::uint64_t e = 1;
    for (const auto& x : s) e *= static_cast<std::uint64_t>(std::max<std::int64_t>(0, x.get<std::int64_t>()));
    n += e;
  }
  return n;
}

DType list_dtype(const TorchArg& a) {
  const auto p = a.type.find("Tensor(");
  return p == std::string::npos ? DType::fp32 : dtype_of_type(std::string_view(a.type).substr(p));
}

// ---- the operator table -------------------------------------------------------------------------

enum class Family {
  mm, addmm, bmm, baddbmm, matmul, linear, grouped_mm, conv, conv_backward, sdpa, sdpa_flash,
  sdpa_efficient, sdpa_backward, layer_norm, batch_norm, softmax, activation, elementwise,
  reduction, foreach, fused_adam,
};

const std::map<std::string, Family, std::less<>>& table() {
  static const std::map<std::string, Family, std::less<>> t = [] {
    std::map<std::string, Family, std::less<>> m;
    m["aten::mm"] = Family::mm;
    m["aten::addmm"] = Family::addmm;
    m["aten::bmm"] = Family::bmm;
    m["aten::baddbmm"] = Family::baddbmm;
    m["aten::matmul"] = Family::matmul;
    m["aten::linear"] = Family::linear;
    for (const char* n : {"aten::_grouped_mm", "aten::grouped_mm", "aten::_scaled_grouped_mm"}) {
      m[n] = Family::grouped_mm;
    }
    for (const char* n : {"aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution",
                          "aten::_convolution", "aten::cudnn_convolution",
                          "aten::mkldnn_convolution", "aten::conv_transpose2d"}) {
      m[n] = Family::conv;
    }
    m["aten::convolution_backward"] = Family::conv_backward;
    m["aten::scaled_dot_product_attention"] = Family::sdpa;
    m["aten::_scaled_dot_product_flash_attention"] = Family::sdpa_flash;
    m["aten::_scaled_dot_product_cudnn_attention"] = Family::sdpa_flash;
    m["aten::_scaled_dot_product_efficient_attention"] = Family::sdpa_efficient;
    for (const char* n : {"aten::_scaled_dot_product_flash_attention_backward",
                          "aten::_scaled_dot_product_efficient_attention_backward",
                          "aten::_scaled_dot_product_cudnn_attention_backward"}) {
      m[n] = Family::sdpa_backward;
    }
    for (const char* n : {"aten::layer_norm", "aten::native_layer_norm",
                          "aten::native_layer_norm_backward", "aten::rms_norm",
                          "aten::_fused_rms_norm", "aten::_fused_rms_norm_backward",
                          "aten::group_norm", "aten::native_group_norm"}) {
      m[n] = Family::layer_norm;
    }
    for (const char* n : {"aten::batch_norm", "aten::native_batch_norm", "aten::cudnn_batch_norm",
                          "aten::_batch_norm_impl_index", "aten::cudnn_batch_norm_backward",
                          "aten::native_batch_norm_backward", "aten::_native_batch_norm_legit"}) {
      m[n] = Family::batch_norm;
    }
    for (const char* n : {"aten::softmax", "aten::_softmax", "aten::log_softmax",
                          "aten::_log_softmax", "aten::_softmax_backward_data",
                          "aten::_log_softmax_backward_data"}) {
      m[n] = Family::softmax;
    }
    for (const char* n : {"aten::relu", "aten::relu_", "aten::gelu", "aten::gelu_", "aten::silu",
                          "aten::silu_", "aten::sigmoid", "aten::sigmoid_", "aten::tanh",
                          "aten::tanh_", "aten::threshold", "aten::threshold_", "aten::hardtanh",
                          "aten::hardtanh_", "aten::leaky_relu", "aten::leaky_relu_",
                          "aten::exp", "aten::log", "aten::rsqrt", "aten::sqrt", "aten::neg",
                          "aten::pow"}) {
      m[n] = Family::activation;
    }
    for (const char* n :
         {"aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::mul", "aten::mul_",
          "aten::div", "aten::div_", "aten::addcmul", "aten::addcmul_", "aten::addcdiv",
          "aten::addcdiv_", "aten::where", "aten::masked_fill", "aten::masked_fill_",
          "aten::copy_", "aten::clone", "aten::contiguous", "aten::fill_", "aten::zero_",
          "aten::lerp_", "aten::clamp", "aten::clamp_", "aten::dropout", "aten::native_dropout",
          "aten::native_dropout_backward", "aten::threshold_backward", "aten::gelu_backward",
          "aten::silu_backward", "aten::sigmoid_backward", "aten::tanh_backward", "aten::cat",
          "aten::stack", "aten::embedding_dense_backward", "aten::index_select",
          "aten::embedding", "aten::tril", "aten::triu", "aten::ones_like", "aten::zeros_like",
          "aten::flatten_dense_tensors", "aten::unflatten_dense_tensors"}) {
      m[n] = Family::elementwise;
    }
    for (const char* n :
         {"aten::sum", "aten::mean", "aten::amax", "aten::max", "aten::norm",
          "aten::linalg_vector_norm", "aten::max_pool2d", "aten::max_pool2d_with_indices",
          "aten::max_pool2d_with_indices_backward", "aten::avg_pool2d",
          "aten::avg_pool2d_backward", "aten::adaptive_avg_pool2d",
          "aten::_adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d_backward",
          "aten::cross_entropy_loss", "aten::nll_loss", "aten::nll_loss_forward",
          "aten::nll_loss_backward", "aten::nll_loss_nd", "aten::mse_loss"}) {
      m[n] = Family::reduction;
    }
    for (const char* n : {"aten::_foreach_add_", "aten::_foreach_mul_", "aten::_foreach_div_",
                          "aten::_foreach_sub_", "aten::_foreach_addcmul_",
                          "aten::_foreach_addcdiv_", "aten::_foreach_sqrt",
                          "aten::_foreach_lerp_", "aten::_foreach_add", "aten::_foreach_mul",
                          "aten::_foreach_div", "aten::_foreach_sqrt_", "aten::_foreach_copy_",
                          "aten::_foreach_zero_", "aten::_foreach_norm"}) {
      m[n] = Family::foreach;
    }
    for (const char* n : {"aten::_fused_adam_", "aten::_fused_adamw_", "aten::_fused_adam",
                          "aten::_fused_adamw", "aten::_fused_sgd_"}) {
      m[n] = Family::fused_adam;
    }
    return m;
  }();
  return t;
}

Op gemm(std::uint64_t m, std::uint64_t k, std::uint64_t n, std::uint64_t batch, DType d) {
  Op op;
  op.kind = OpKind::gemm;
  op.m = m;
  op.k = k;
  op.n = n;
  op.batch = batch;
  op.dtype = d;
  return op;
}

std::uint64_t u(std::int64_t v) { return static_cast<std::uint64_t>(v); }

// The largest tensor among the inputs and outputs: the elements an element-wise op touches.
std::pair<std::uint64_t, std::size_t> largest(const TorchCall& c) {
  std::uint64_t best = 0;
  std::size_t tensors = 0;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    if (auto s = shape_of(c.inputs, i)) {
      ++tensors;
      best = std::max(best, numel(*s));
    }
  }
  for (std::size_t i = 0; i < c.outputs.size(); ++i) {
    if (auto s = shape_of(c.outputs, i)) best = std::max(best, numel(*s));
  }
  return {best, tensors};
}

DType first_tensor_dtype(const TorchCall& c) {
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    if (is_tensor(c.inputs[i])) return dtype_of(c.inputs, i);
  }
  for (std::size_t i = 0; i < c.outputs.size(); ++i) {
    if (is_tensor(c.outputs[i])) return dtype_of(c.outputs, i);
  }
  return DType::fp32;
}

std::optional<Op> map_call(Family f, const TorchCall& c, std::optional<DType> mm_dtype) {
  const auto& in = c.inputs;
  const auto mm = [&](std::size_t i) { return mm_dtype.value_or(dtype_of(in, i)); };
  switch (f) {
    case Family::mm:
    case Family::addmm: {
      const std::size_t a = f == Family::mm ? 0 : 1;
      const auto A = shape_of(in, a), B = shape_of(in, a + 1);
      if (!A || !B || A->size() != 2 || B->size() != 2) return {};
      return gemm(u((*A)[0]), u((*A)[1]), u((*B)[1]), 1, mm(a));
    }
    case Family::bmm:
    case Family::baddbmm: {
      const std::size_t a = f == Family::bmm ? 0 : 1;
      const auto A = shape_of(in, a), B = shape_of(in, a + 1);
      if (!A || !B || A->size() != 3 || B->size() != 3) return {};
      return gemm(u((*A)[1]), u((*A)[2]), u((*B)[2]), u((*A)[0]), mm(a));
    }
    case Family::matmul: {
      const auto A = shape_of(in, 0), B = shape_of(in, 1);
      if (!A || !B || A->empty() || B->empty()) return {};
      const std::uint64_t m = A->size() >= 2 ? u((*A)[A->size() - 2]) : 1;
      const std::uint64_t k = u(A->back());
      const std::uint64_t n = B->size() >= 2 ? u(B->back()) : 1;
      // broadcast batch: the larger of the two leading products
      std::uint64_t ba = 1, bb = 1;
      for (std::size_t i = 0; i + 2 < A->size(); ++i) ba *= u((*A)[i]);
      for (std::size_t i = 0; i + 2 < B->size(); ++i) bb *= u((*B)[i]);
      // [.., M, K] x [K, N] with batch dims only on A: one GEMM of all rows
      if (B->size() <= 2 && A->size() > 2) return gemm(ba * m, k, n, 1, mm(0));
      return gemm(m, k, n, std::max(ba, bb), mm(0));
    }
    case Family::linear: {
      const auto X = shape_of(in, 0), W = shape_of(in, 1);
      if (!X || !W || X->empty() || W->size() != 2) return {};
      return gemm(numel(*X) / std::max<std::uint64_t>(1, u(X->back())), u(X->back()), u((*W)[0]),
                  1, mm(0));
    }
    case Family::grouped_mm: {
      const auto A = shape_of(in, 0), B = shape_of(in, 1);
      if (!A || !B || B->size() != 3) return {};
      const std::uint64_t g = std::max<std::uint64_t>(1, u((*B)[0]));
      if (A->size() == 3) return gemm(u((*A)[1]), u((*A)[2]), u((*B)[2]), g, mm(0));
      if (A->size() != 2) return {};
      // tokens routed to the groups: the recorded offsets are not shapes, so an even split
      return gemm((u((*A)[0]) + g - 1) / g, u((*A)[1]), u((*B)[2]), g, mm(0));
    }
    case Family::conv:
    case Family::conv_backward: {
      // forward (input, weight, ...) -> output; backward (grad_output, input, weight, ...)
      const bool bwd = f == Family::conv_backward;
      const auto X = shape_of(in, bwd ? 1 : 0), W = shape_of(in, bwd ? 2 : 1);
      const auto Y = bwd ? shape_of(in, 0) : shape_of(c.outputs, 0);
      if (!X || !W || !Y || X->size() < 3 || W->size() != X->size() || Y->size() != X->size() ||
          (*W)[1] <= 0 || (*X)[1] % (*W)[1] != 0) {
        return {};
      }
      const std::uint64_t groups = u((*X)[1] / (*W)[1]);
      std::uint64_t out_pixels = u((*Y)[0]), kernel = u((*W)[1]);
      for (std::size_t i = 2; i < Y->size(); ++i) out_pixels *= u((*Y)[i]);
      for (std::size_t i = 2; i < W->size(); ++i) kernel *= u((*W)[i]);
      const std::uint64_t out_ch = u((*W)[0]) / std::max<std::uint64_t>(1, groups);
      std::uint64_t products = 1;
      if (bwd) {
        // output_mask [input, weight, bias]: one GEMM of the forward's size per gradient
        products = 0;
        const auto& mask = in.size() > 10 ? in[10].value : Json();
        if (mask.is_array() && mask.size() >= 2) {
          for (std::size_t i = 0; i < 2; ++i) products += mask[i].is_boolean() && mask[i].get<bool>();
        } else {
          products = 2;
        }
        if (products == 0) return {};
      }
      return gemm(out_pixels, kernel, out_ch, groups * products, mm(bwd ? 1 : 0));
    }
    case Family::sdpa:
    case Family::sdpa_flash:
    case Family::sdpa_efficient: {
      const auto Q = shape_of(in, 0), K = shape_of(in, 1);
      if (!Q || !K || Q->size() != 4 || K->size() != 4) return {};
      Op op;
      op.kind = OpKind::attention;
      op.batch = u((*Q)[0]);
      op.heads = u((*Q)[1]);
      op.seq_q = u((*Q)[2]);
      op.seq_kv = u((*K)[2]);
      op.head_dim = u((*Q)[3]);
      op.dtype = mm(0);
      const std::size_t causal_at = f == Family::sdpa ? 5 : f == Family::sdpa_flash ? 4 : 6;
      op.causal = bool_arg(in, causal_at).value_or(false);
      return op;
    }
    case Family::sdpa_backward: {
      // (grad_out, query, key, value, ...): five products of the forward's size (dQ, dK, dV,
      // the recomputed scores and dP)
      const auto Q = shape_of(in, 1), K = shape_of(in, 2);
      if (!Q || !K || Q->size() != 4 || K->size() != 4) return {};
      return gemm(u((*Q)[2]), u((*Q)[3]), u((*K)[2]), 5 * u((*Q)[0]) * u((*Q)[1]), mm(1));
    }
    case Family::layer_norm:
    case Family::batch_norm:
    case Family::softmax: {
      const std::size_t i = c.op.find("backward") != std::string::npos &&
                                    f != Family::softmax && shape_of(in, 1)
                                ? 1
                                : 0;
      const auto X = shape_of(in, i);
      if (!X || X->empty()) return {};
      Op op;
      op.kind = f == Family::softmax ? OpKind::softmax : OpKind::norm;
      op.elements = numel(*X);
      op.dtype = dtype_of(in, i);
      if (f == Family::batch_norm) {
        op.rows = X->size() >= 2 ? u((*X)[1]) : 1;  // statistics per channel
      } else {
        op.rows = op.elements / std::max<std::uint64_t>(1, u(X->back()));
      }
      op.rows = std::max<std::uint64_t>(1, op.rows);
      if (op.elements == 0) return {};
      return op;
    }
    case Family::activation: {
      const auto [n, tensors] = largest(c);
      if (n == 0) return {};
      Op op;
      op.kind = OpKind::activation;
      op.elements = n;
      op.dtype = first_tensor_dtype(c);
      return op;
    }
    case Family::elementwise: {
      auto [n, tensors] = largest(c);
      std::size_t inputs = tensors;
      for (const auto& a : in) {
        if (const auto e = list_numel(a); e > 0) {  // cat, stack, flatten of a tensor list
          n = std::max(n, e);
          inputs = std::max<std::size_t>(inputs, 1);
        }
      }
      if (n == 0) return {};
      Op op;
      op.kind = OpKind::elementwise;
      op.elements = n;
      op.inputs = std::max<std::size_t>(1, inputs);
      op.dtype = first_tensor_dtype(c);
      return op;
    }
    case Family::reduction: {
      const auto X = shape_of(in, 0);
      if (!X) return {};
      Op op;
      op.kind = OpKind::reduction;
      op.elements = numel(*X);
      if (const auto Y = shape_of(c.outputs, 0)) op.outputs = std::max<std::uint64_t>(1, numel(*Y));
      op.outputs = std::min(op.outputs, std::max<std::uint64_t>(1, op.elements));
      op.dtype = dtype_of(in, 0);
      if (op.elements == 0) return {};
      return op;
    }
    case Family::foreach:
    case Family::fused_adam: {
      std::uint64_t n = 0;
      std::size_t lists = 0;
      DType d = DType::fp32;
      for (const auto& a : in) {
        if (const auto e = list_numel(a); e > 0) {
          if (lists++ == 0) {
            n = e;
            d = list_dtype(a);
          }
        }
      }
      if (n == 0) return {};
      Op op;
      op.kind = OpKind::elementwise;
      op.elements = n;
      // Adam reads parameter, gradient and two moments (and writes three of them back)
      op.inputs = f == Family::fused_adam ? 4 : std::max<std::size_t>(1, lists);
      op.dtype = d;
      return op;
    }
  }
  return {};
}

}  // namespace

std::string torch_op_name(std::string_view name) {
  if (name.ends_with(')')) {
    const auto open = name.rfind('(');
    if (open != std::string_view::npos && open + 2 <= name.size() - 1 &&
        std::all_of(name.begin() + long(open) + 1, name.end() - 1,
                    [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })) {
      return std::string(name.substr(0, open));
    }
  }
  return std::string(name);
}

bool is_known_torch_op(std::string_view op) { return table().contains(op); }

Json parse_python_literal(std::string_view text, const std::string& where) {
  return Literal(text, where).parse();
}

std::vector<TorchArg> parse_torch_args(std::string_view values, std::string_view shapes,
                                       std::string_view types, const std::string& where) {
  const auto list = [&](std::string_view s, const char* what) {
    if (s.empty()) return Json::array();
    Json j = parse_python_literal(s, fmt::format("{} {}", where, what));
    if (!j.is_array()) throw TraceError(fmt::format("{} {}: expected a list", where, what));
    return j;
  };
  return torch_args_from_json(list(values, "values"), list(shapes, "shapes"),
                              list(types, "types"));
}

std::vector<TorchArg> torch_args_from_json(const Json& values, const Json& shapes,
                                           const Json& types) {
  std::vector<TorchArg> out;
  const std::size_t n = types.is_array() ? types.size() : 0;
  for (std::size_t i = 0; i < n; ++i) {
    TorchArg a;
    if (types[i].is_string()) a.type = types[i].get<std::string>();
    if (shapes.is_array() && i < shapes.size()) a.shape = shapes[i];
    if (values.is_array() && i < values.size()) a.value = values[i];
    out.push_back(std::move(a));
  }
  return out;
}

DType torch_dtype(std::string_view type) {
  const auto p = type.find("Tensor(");
  return dtype_of_type(p == std::string_view::npos ? type : type.substr(p));
}

std::optional<Op> map_torch_op(const TorchCall& call, std::optional<DType> matmul_dtype) {
  const auto it = table().find(call.op);
  if (it == table().end()) return {};
  auto op = map_call(it->second, call, matmul_dtype);
  if (!op) return {};
  if (op->kind == OpKind::gemm && (op->m == 0 || op->k == 0 || op->n == 0 || op->batch == 0)) {
    return {};
  }
  if (op->kind == OpKind::attention &&
      (op->batch == 0 || op->heads == 0 || op->seq_q == 0 || op->seq_kv == 0 || op->head_dim == 0)) {
    return {};
  }
  op->source_type = call.op;
  return op;
}

void OperatorCoverage::add(const OperatorCoverage& o) {
  kernels += o.kernels;
  mapped += o.mapped;
  recorded_seconds += o.recorded_seconds;
  mapped_seconds += o.mapped_seconds;
  unmapped_scale = o.unmapped_scale;
  for (const auto& [name, e] : o.mapped_ops) {
    mapped_ops[name].kernels += e.kernels;
    mapped_ops[name].seconds += e.seconds;
  }
  for (const auto& [name, e] : o.unmapped_ops) {
    unmapped_ops[name].kernels += e.kernels;
    unmapped_ops[name].seconds += e.seconds;
  }
}

std::string OperatorCoverage::describe(std::size_t top) const {
  const auto pct = [](double a, double b) { return b > 0 ? 100.0 * a / b : 0.0; };
  if (recorded_seconds <= 0.0) {
    // A trace without kernel times (a PyTorch ET read directly): calls only.
    std::string out = fmt::format(
        "operators mapped to Trainium compute: {} of {} operator calls that do device work "
        "({:.1f} %); {} operators mapped\n",
        mapped, kernels, pct(double(mapped), double(kernels)), mapped_ops.size());
    if (unmapped_ops.empty()) return out;
    std::vector<std::pair<std::string, Entry>> v(unmapped_ops.begin(), unmapped_ops.end());
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      return a.second.kernels > b.second.kernels;
    });
    out += fmt::format("not mapped ({} operators):", v.size());
    for (std::size_t i = 0; i < v.size() && i < top; ++i) {
      out += fmt::format(" {} {},", v[i].first, v[i].second.kernels);
    }
    out.pop_back();
    if (v.size() > top) out += fmt::format(", ... {} more", v.size() - top);
    return out + "\n";
  }
  std::string out = fmt::format(
      "operators mapped to Trainium compute: {} of {} recorded kernels ({:.1f} %), {:.1f} % of "
      "{:.6g} s recorded GPU time; {} operators mapped",
      mapped, kernels, pct(double(mapped), double(kernels)), pct(mapped_seconds, recorded_seconds),
      recorded_seconds, mapped_ops.size());
  out += "\n";
  if (unmapped_ops.empty()) return out;
  std::vector<std::pair<std::string, Entry>> v(unmapped_ops.begin(), unmapped_ops.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  out += fmt::format("kept as recorded durations{} ({} operators, {:.1f} % of recorded time):",
                     unmapped_scale == 1.0 ? std::string()
                                           : fmt::format(" x {:g}", unmapped_scale),
                     v.size(), pct(recorded_seconds - mapped_seconds, recorded_seconds));
  for (std::size_t i = 0; i < v.size() && i < top; ++i) {
    out += fmt::format(" {} {} ({:.1f} %),", v[i].first, v[i].second.kernels,
                       pct(v[i].second.seconds, recorded_seconds));
  }
  out.pop_back();
  if (v.size() > top) out += fmt::format(", ... {} more", v.size() - top);
  out += "\n";
  return out;
}

}  // namespace trnsim::trace
