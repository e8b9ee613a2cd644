// SPDX-License-Identifier: GPL-3.0-or-later
// The transformer-stack controls (a group in the control panel): depth (1 = the single attention
// layer, the default), post-norm / pre-norm, ReLU / GELU, position encoding, and the weights:
// seeded with a seed, or loaded from a safetensors file with GPT-2 tensor names.
#pragma once

#include "live/stacksettings.h"

#include <QGroupBox>

class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;

namespace attnviz::ui {

class StackControls : public QGroupBox {
    Q_OBJECT
public:
    static constexpr int kMaxDepth = 48;

    explicit StackControls(QWidget *parent = nullptr);

    StackSettings settings() const;
    // Sets the widgets without emitting changed().
    void setSettings(const StackSettings &s);
    // A file's weights were loaded: selects them (and GPT-2's pre-norm, GELU (tanh), learned positions
    // when the file has a position table) and emits changed().
    void setLoadedWeights(std::shared_ptr<const StackWeights<float>> weights, int depth, const QString &source);

    // The layer the main views show (a selection, not a setting: no recompute).
    void setShownLayer(int layer);
    int shownLayer() const;

signals:
    void changed();
    void layerChanged(int layer);
    void loadWeightsRequested();

private:
    void updateEnabled();

    std::shared_ptr<const StackWeights<float>> m_loaded;
    QString m_loadedSource;
    int m_loadedDepth = 0;
    bool m_quiet = false;

    QSpinBox *m_depth, *m_seed, *m_layer;
    QComboBox *m_norm, *m_activation, *m_positions, *m_source;
    QPushButton *m_load;
    QLabel *m_note, *m_sourceLabel;
};

} // namespace attnviz::ui
