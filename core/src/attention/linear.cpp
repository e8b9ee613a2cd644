// SPDX-License-Identifier: GPL-3.0-or-later
// applyLinear: one dense layer, y = x W^T + b, as tasks of the core's pool. Shapes: x (t, in),
// W (out, in) row-major, y (t, out). Tasks are (row block, column block) tiles of y; each is one
// Eigen GEMM (x rows) * (W rows)^T, so Eigen packs only the tile's share of W.
#include "attnviz/linear.h"
#include "attnviz/parallel.h"

#include <algorithm>

namespace attnviz {

template <typename T>
void applyLinear(const Mat<T> &x, const Linear<T> &l, Mat<T> &out)
{
    if (l.isIdentity()) {
        out = x;
    } else {
        const Eigen::Index t = x.rows(), nOut = l.W.rows();
        out.resize(t, nOut);
        // Rows per tile: 128 keeps a tile's x in L2; a short text is cut into column tiles too, so
        // that every thread has at least two tiles (the pool hands them out dynamically).
        constexpr Eigen::Index kRows = 128, kMinCols = 64;
        const int rowTiles = int((t + kRows - 1) / kRows);
        const int want = 2 * coreThreads();
        int colTiles = 1;
        if (rowTiles < want)
            colTiles = int(std::max<Eigen::Index>(1, std::min<Eigen::Index>((want + rowTiles - 1) / rowTiles, nOut / kMinCols)));
        // Column tiles a multiple of 16 wide (an AVX-512 float register) so every tile but the last is whole.
        const Eigen::Index colStep = ((nOut + colTiles - 1) / colTiles + 15) / 16 * 16;
        colTiles = int((nOut + colStep - 1) / colStep);
        const double work = 2.0 * double(t) * double(nOut) * double(l.W.cols());
        parallelFor(rowTiles * colTiles, work, [&](int task) {
            const Eigen::Index r0 = Eigen::Index(task / colTiles) * kRows, n = std::min(kRows, t - r0);
            const Eigen::Index c0 = Eigen::Index(task % colTiles) * colStep, m = std::min(colStep, nOut - c0);
            auto tile = out.block(r0, c0, n, m);
            tile.noalias() = x.middleRows(r0, n) * l.W.middleRows(c0, m).transpose();
            if (l.hasBias())
                tile.rowwise() += l.b.segment(c0, m).transpose();
        });
        return;
    }
    if (l.hasBias())
        out.rowwise() += l.b.transpose();
}

template void applyLinear<float>(const Mat<float> &, const Linear<float> &, Mat<float> &);
template void applyLinear<double>(const Mat<double> &, const Linear<double> &, Mat<double> &);

} // namespace attnviz
