// SPDX-License-Identifier: GPL-3.0-or-later
// Every control of the computation and of what is shown, in one panel. It owns no state
// beyond its widgets: each change emits the complete ComputeSettings value.
#pragma once

#include "live/livetypes.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGroupBox;
class QLabel;
class QPushButton;
class QSlider;
class QSpinBox;

namespace attnviz::ui {

class StackControls;

class ControlPanel : public QWidget {
    Q_OBJECT
public:
    explicit ControlPanel(QWidget *parent = nullptr);

    ComputeSettings settings() const;
    void setSettings(const ComputeSettings &s);
    HeadDisplay headDisplay() const;
    bool showNumbers() const;
    void setShowNumbers(bool show);
    void setHeadDisplay(HeadDisplay d);
    void setSelectedHead(int head);

    // The embedding table's width, for the d_head readout and the head-count explanation.
    void setDModel(int dModel);
    void setBundledAvailable(bool available, const QString &why);
    // Names the table in use ("attnviz-en50 (bundled)", "glove.6B.50d.txt (400,000 words)").
    void setTableDescription(const QString &text);
    void setLoadedProjections(std::shared_ptr<const Projections<float>> p, const QString &source);
    // Temperature slider position <-> T (log scale, 0.05 .. 20).
    static double temperatureForSlider(int value);
    static int sliderForTemperature(double t);
    StackControls *stackControls() const { return m_stack; }
    // A model of its own (a folder, the bundled model): its heads are fixed (the head chooser's range),
    // and every control that only the word-vector attention has (scaling, normalization, dropout,
    // projections, the stack, the table, d_head, the head count) is disabled with a tooltip saying
    // why. The Mask control shows the model's own mask (causal for GPT-2, none for BERT; with
    // "+ padding" once a token is clicked) and is disabled. Null = the word vectors again: the head
    // count and mask set before come back.
    void setModel(const ModelInfo *info);
    bool modelMode() const { return m_modelMode; }
    // An encoder-decoder model: the Attention selector (Encoder / Decoder / Cross) shows.
    void setEncoderDecoder(bool on);
    AttentionKind attentionKind() const;
    void setAttentionKind(AttentionKind kind); // emits nothing
    // The layer chooser beside the head chooser: enabled for a trace of more than one layer.
    void setLayerCount(int layers);
    void setShownLayer(int layer);
    int shownLayer() const;
    // For a panel whose shown head is chosen elsewhere (the Compare tab's side B): the head display
    // and head selector stay disabled, with `why` as their tooltip.
    void followHeadElsewhere(const QString &why);

signals:
    void settingsChanged(const attnviz::ui::ComputeSettings &settings);
    void headDisplayChanged(attnviz::ui::HeadDisplay display);
    void headChanged(int head);
    void layerChanged(int layer);
    void attentionKindChanged(attnviz::AttentionKind kind);
    void showNumbersChanged(bool show);
    void loadEmbeddingsRequested();
    void useBundledRequested();
    void loadProjectionsRequested();
    void clearCustomMaskRequested();

private:
    void showKeyValueGroup();
    void emitSettings();
    void updateDerived();
    void applyModelMode();

    int m_dModel = 0;
    bool m_blockSignals = false;
    bool m_headElsewhere = false;
    bool m_modelMode = false;
    QString m_modelName;
    int m_wordVectorHeads = 1; // the head count before a model fixed it
    int m_kvGroup = 1;          // query heads per key/value head of the model shown (1: none shared)
    bool m_modelCausal = false; // the model attends only backwards: its mask is always causal
    int m_wordVectorMask = 0;   // the mask chosen before a model fixed it (MaskChoice)
    QString m_modelScaleText, m_modelScaleWhy; // what the model multiplies q·k by, shown instead of the combo
    QLabel *m_modelScale = nullptr;
    std::shared_ptr<const Projections<float>> m_loaded;
    QString m_loadedSource;

    QSpinBox *m_heads, *m_dHead, *m_head, *m_layer;
    QLabel *m_dHeadLabel, *m_headsNote;
    QComboBox *m_headDisplay, *m_scale, *m_norm, *m_mask, *m_maskMethod, *m_projection, *m_backend;
    QComboBox *m_initScheme, *m_drawOrder, *m_outMode;
    QSpinBox *m_outWidth;
    QSlider *m_temperature;
    QLabel *m_temperatureLabel;
    QLabel *m_temperatureRowLabel = nullptr; // "Temperature" in the form: greyed with the slider
    QPushButton *m_clearMask, *m_loadProjections, *m_loadEmbeddings, *m_useBundled;
    QSpinBox *m_projSeed, *m_dropoutSeed;
    QLabel *m_projSource, *m_tableLabel;
    QDoubleSpinBox *m_dropout;
    QCheckBox *m_numbers;
    QLabel *m_layerLabel;
    QComboBox *m_attention = nullptr;
    QLabel *m_attentionLabel = nullptr;
    StackControls *m_stack = nullptr;
    QGroupBox *m_projBox = nullptr;
    QLabel *m_wordVectorsOnly = nullptr; // with a model: why the stack and projections are not shown
};

} // namespace attnviz::ui
