#include <string>

#include "graph/ops/geometry/window.h"
#include "runtime/cuda/kernels/conv_kernels.h"

namespace memplan::cuda {

int64_t Window2d::out_h() const {
  return PaddedWindowOutput(in_h, kernel_h, stride_h, dilation_h, pad_top, pad_bottom, ceil_mode)
      .value_or(0);
}

int64_t Window2d::out_w() const {
  return PaddedWindowOutput(in_w, kernel_w, stride_w, dilation_w, pad_left, pad_right, ceil_mode)
      .value_or(0);
}

Expected<Window2d> MakeWindow2d(std::string_view op, const Attributes& attributes,
                                const std::vector<int64_t>& x, const std::vector<int64_t>& kernel,
                                bool read_ceil_mode) {
  const std::string name(op);
  if (x.size() != 4 || kernel.size() != 2)
    return MakeError(name + ": the window is not 2-D over an NCHW input");
  auto window = ReadWindowAttributes(attributes, 2, kernel, read_ceil_mode);
  if (!window.ok()) return MakeError(name + ": " + window.error().message);
  if (window->kernel != kernel) return MakeError(name + ": kernel_shape disagrees with the weight");
  auto h = ResolveWindowAxis(*window, 0, x[2]);
  if (!h.ok()) return MakeError(name + ": " + h.error().message);
  auto w = ResolveWindowAxis(*window, 1, x[3]);
  if (!w.ok()) return MakeError(name + ": " + w.error().message);
  Window2d win;
  win.channels = x[1];
  win.in_h = h->input;
  win.in_w = w->input;
  win.kernel_h = h->kernel;
  win.kernel_w = w->kernel;
  win.stride_h = h->stride;
  win.stride_w = w->stride;
  win.pad_top = h->pad_begin;
  win.pad_left = w->pad_begin;
  win.pad_bottom = h->pad_end;
  win.pad_right = w->pad_end;
  win.dilation_h = h->dilation;
  win.dilation_w = w->dilation;
  // SAME padding fixes the size through the resolved pads; ceil_mode matters only without it.
  win.ceil_mode = window->ceil_mode && !window->same_padding();
  MEMPLAN_CHECK(win.out_h() == h->output && win.out_w() == w->output);
  return win;
}

int64_t Window2d::SourceOffset(int64_t row, int64_t col) const {
  const int64_t kw = row % kernel_w;
  const int64_t kh = (row / kernel_w) % kernel_h;
  const int64_t ch = row / (kernel_w * kernel_h);
  const int64_t ow = col % out_w();
  const int64_t oh = col / out_w();
  const int64_t ih = oh * stride_h - pad_top + kh * dilation_h;
  const int64_t iw = ow * stride_w - pad_left + kw * dilation_w;
  if (ih < 0 || ih >= in_h || iw < 0 || iw >= in_w) return -1;
  return (ch * in_h + ih) * in_w + iw;
}

}  // namespace memplan::cuda
