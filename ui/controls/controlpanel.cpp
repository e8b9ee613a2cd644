// SPDX-License-Identifier: GPL-3.0-or-later
#include "controls/controlpanel.h"
#include "controls/formwidgets.h"

#include "live/livecompute.h"
#include "controls/stackcontrols.h"

#include "attnviz/headslices.h"

#include <algorithm>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include <cmath>


namespace attnviz::ui {

void ControlPanel::followHeadElsewhere(const QString &why)
{
    m_headElsewhere = true;
    for (QWidget *w : {static_cast<QWidget *>(m_headDisplay), static_cast<QWidget *>(m_head)}) {
        w->setEnabled(false);
        w->setToolTip(why);
    }
}

double ControlPanel::temperatureForSlider(int value)
{
    // 0..200 -> 0.05 .. 20 on a log scale, 100 -> 1
    return std::pow(10.0, (value - 100) / 100.0 * std::log10(20.0));
}

int ControlPanel::sliderForTemperature(double t)
{
    return int(std::lround(100 + 100.0 * std::log10(std::max(1e-6, t)) / std::log10(20.0)));
}

ControlPanel::ControlPanel(QWidget *parent)
    : QWidget(parent)
{
    auto *outer = new QVBoxLayout(this);

    // Heads
    auto *headsBox = new QGroupBox(tr("Heads"), this);
    auto *hf = new QFormLayout(headsBox);
    m_heads = new QSpinBox(headsBox);
    m_heads->setObjectName(QStringLiteral("headsSpin"));
    m_heads->setRange(1, 64);
    m_dHeadLabel = new QLabel(headsBox);
    m_dHeadLabel->setObjectName(QStringLiteral("dHeadLabel"));
    auto *hrow = new QHBoxLayout;
    hrow->addWidget(m_heads);
    hrow->addWidget(m_dHeadLabel, 1);
    hf->addRow(tr("Number of heads"), hrow);
    m_dHead = new QSpinBox(headsBox);
    m_dHead->setObjectName(QStringLiteral("dHeadSpin"));
    m_dHead->setRange(0, 4096);
    m_dHead->setSpecialValueText(tr("auto (d_model / heads)"));
    m_dHead->setToolTip(tr("The width of each head. Free only with random or loaded projections; identity "
                           "projections split the embedding into equal slices."));
    hf->addRow(tr("d_head"), m_dHead);
    m_headDisplay = combo(headsBox, "headDisplayCombo",
                          {{tr("One head"), int(HeadDisplay::One)},
                           {tr("Average of heads"), int(HeadDisplay::Average)},
                           {tr("All heads"), int(HeadDisplay::All)}});
    m_head = new QSpinBox(headsBox);
    m_head->setObjectName(QStringLiteral("headSpin"));
    m_head->setRange(0, 0);
    auto *srow = new QHBoxLayout;
    srow->addWidget(m_headDisplay, 1);
    srow->addWidget(m_head);
    hf->addRow(tr("Show"), srow);
    m_attention = combo(headsBox, "attentionKindCombo",
                        {{attentionKindName(AttentionKind::Encoder), int(AttentionKind::Encoder)},
                         {attentionKindName(AttentionKind::Self), int(AttentionKind::Self)},
                         {attentionKindName(AttentionKind::Cross), int(AttentionKind::Cross)}});
    m_attention->setCurrentIndex(1);
    m_attention->setToolTip(tr("An encoder-decoder model's attention the views draw: the encoder's self-attention "
                               "(source × source), the decoder's (target × target, causal) or the cross-attention "
                               "(target rows × source columns)"));
    m_attentionLabel = new QLabel(tr("Attention"), headsBox);
    hf->addRow(m_attentionLabel, m_attention);
    m_attention->setVisible(false);
    m_attentionLabel->setVisible(false);
    connect(m_attention, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        if (!m_blockSignals)
            emit attentionKindChanged(attentionKind());
    });
    m_layer = new QSpinBox(headsBox);
    m_layer->setObjectName(QStringLiteral("layerSpin"));
    m_layer->setRange(0, 0);
    m_layerLabel = new QLabel(headsBox);
    auto *lrow = new QHBoxLayout;
    lrow->addWidget(m_layer);
    lrow->addWidget(m_layerLabel, 1);
    hf->addRow(tr("Layer"), lrow);
    setLayerCount(1);
    outer->addWidget(headsBox);

    // Scores
    auto *scoreBox = new QGroupBox(tr("Scores and weights"), this);
    auto *sf = new QFormLayout(scoreBox);
    m_scale = combo(scoreBox, "scaleCombo",
                    {{QStringLiteral("1/√d_head"), int(ScaleRule::InvSqrtDHead)},
                     {QStringLiteral("1/√d_model"), int(ScaleRule::InvSqrtDModel)},
                     {tr("none"), int(ScaleRule::None)},
                     {tr("temperature 1/(T·√d_head)"), int(ScaleRule::Temperature)}});
    // a model's own scaling, in the combo's place while a model is shown (the combo keeps the word
    // vectors' choice)
    m_modelScale = new QLabel(scoreBox);
    m_modelScale->setObjectName(QStringLiteral("modelScaleLabel"));
    m_modelScale->setEnabled(false);
    m_modelScale->setVisible(false);
    auto *scaleRow = new QHBoxLayout;
    scaleRow->addWidget(m_scale, 1);
    scaleRow->addWidget(m_modelScale, 1);
    sf->addRow(tr("Scaling"), scaleRow);
    m_temperature = new QSlider(Qt::Horizontal, scoreBox);
    m_temperature->setObjectName(QStringLiteral("temperatureSlider"));
    m_temperature->setRange(0, 200);
    m_temperature->setValue(100);
    m_temperatureLabel = new QLabel(scoreBox);
    m_temperatureLabel->setMinimumWidth(56);
    auto *trow = new QHBoxLayout;
    trow->addWidget(m_temperature, 1);
    trow->addWidget(m_temperatureLabel);
    sf->addRow(tr("Temperature"), trow);
    m_temperatureRowLabel = qobject_cast<QLabel *>(sf->labelForField(trow));
    m_norm = combo(scoreBox, "normCombo",
                   {{tr("softmax"), int(Normalization::Softmax)},
                    {tr("sum (divide by row sum)"), int(Normalization::Sum)},
                    {tr("cosine similarity"), int(Normalization::Cosine)}});
    sf->addRow(tr("Normalization"), m_norm);
    m_mask = combo(scoreBox, "maskCombo",
                   {{tr("none"), int(MaskChoice::None)},
                    {tr("causal"), int(MaskChoice::Causal)},
                    {tr("padding (click tokens)"), int(MaskChoice::Padding)},
                    {tr("causal + padding"), int(MaskChoice::CausalPadding)},
                    {tr("custom (click heatmap cells)"), int(MaskChoice::Custom)}});
    sf->addRow(tr("Mask"), m_mask);
    m_maskMethod = combo(scoreBox, "maskMethodCombo",
                         {{tr("−∞ before softmax"), int(MaskMethod::NegInf)},
                          {tr("softmax, zero, renormalize"), int(MaskMethod::MultiplyRenormalize)}});
    sf->addRow(tr("Mask method"), m_maskMethod);
    m_clearMask = new QPushButton(tr("Clear custom mask"), scoreBox);
    m_clearMask->setObjectName(QStringLiteral("clearMaskButton"));
    sf->addRow(m_clearMask);
    auto *drow = new QHBoxLayout;
    m_dropout = new QDoubleSpinBox(scoreBox);
    m_dropout->setObjectName(QStringLiteral("dropoutSpin"));
    m_dropout->setRange(0.0, 0.95);
    m_dropout->setSingleStep(0.05);
    m_dropout->setDecimals(2);
    m_dropoutSeed = new QSpinBox(scoreBox);
    m_dropoutSeed->setObjectName(QStringLiteral("dropoutSeedSpin"));
    m_dropoutSeed->setRange(0, 1 << 30);
    m_dropoutSeed->setPrefix(tr("seed "));
    drow->addWidget(m_dropout);
    drow->addWidget(m_dropoutSeed);
    sf->addRow(tr("Dropout"), drow);
    outer->addWidget(scoreBox);

    // With a model the stack and the projections (settings of the word-vector attention) are not
    // shown: greyed, they only took room from the views (the dock's width with larger text).
    m_wordVectorsOnly = note(this);
    m_wordVectorsOnly->setObjectName(QStringLiteral("wordVectorsOnlyNote"));
    m_wordVectorsOnly->setVisible(false);
    outer->addWidget(m_wordVectorsOnly);
    m_stack = new StackControls(this);
    outer->addWidget(m_stack);
    connect(m_stack, &StackControls::changed, this, [this] { emitSettings(); });

    // Projections
    auto *projBox = m_projBox = new QGroupBox(tr("Projections W_q, W_k, W_v, W_o"), this);
    auto *pf = new QFormLayout(projBox);
    m_projection = combo(projBox, "projectionCombo",
                         {{tr("identity (Q = K = V = X)"), int(ProjectionMode::Identity)},
                          {tr("random (nn.Linear init)"), int(ProjectionMode::Random)},
                          {tr("loaded from file"), int(ProjectionMode::File)}});
    pf->addRow(tr("Mode"), m_projection);
    m_projSeed = new QSpinBox(projBox);
    m_projSeed->setObjectName(QStringLiteral("projectionSeedSpin"));
    m_projSeed->setRange(0, 1 << 30);
    m_projSeed->setPrefix(tr("seed "));
    pf->addRow(tr("Random seed"), m_projSeed);
    m_initScheme = combo(projBox, "initSchemeCombo",
                         {{tr("nn.Linear (kaiming uniform)"), int(InitScheme::TorchLinear)},
                          {tr("torch.rand (uniform 0..1)"), int(InitScheme::Uniform01)},
                          {tr("xavier (nn.MultiheadAttention)"), int(InitScheme::XavierUniform)}});
    m_initScheme->setToolTip(tr("How PyTorch initializes the weights after torch.manual_seed(seed): the same seed "
                                "gives the notebook's numbers."));
    pf->addRow(tr("Init"), m_initScheme);
    m_drawOrder = combo(projBox, "drawOrderCombo",
                        {{tr("fused: W_q, W_k, W_v for all heads"), int(DrawOrder::Fused)},
                         {tr("per head: q, k, v of head 0, then head 1…"), int(DrawOrder::PerHead)}});
    m_drawOrder->setToolTip(tr("Fused is one Linear per role (MultiHeadAttention); per head is a list of "
                               "single-head modules (MultiHeadAttentionWrapper)."));
    pf->addRow(tr("Draw order"), m_drawOrder);
    m_outMode = combo(projBox, "outModeCombo",
                      {{tr("to d_model"), 0}, {tr("none: heads concatenated"), -1}, {tr("custom width"), 1}});
    m_outWidth = new QSpinBox(projBox);
    m_outWidth->setObjectName(QStringLiteral("outWidthSpin"));
    m_outWidth->setRange(1, 4096);
    m_outWidth->setValue(8);
    auto *orow = new QHBoxLayout;
    orow->addWidget(m_outMode, 1);
    orow->addWidget(m_outWidth);
    pf->addRow(tr("W_o"), orow);
    m_loadProjections = new QPushButton(tr("Load projections…"), projBox);
    m_projSource = note(projBox);
    pf->addRow(m_loadProjections);
    pf->addRow(m_projSource);
    outer->addWidget(projBox);

    // Embeddings and backend
    auto *dataBox = new QGroupBox(tr("Embeddings and backend"), this);
    auto *df = new QFormLayout(dataBox);
    m_tableLabel = note(dataBox);
    m_tableLabel->setObjectName(QStringLiteral("tableLabel"));
    df->addRow(m_tableLabel);
    auto *erow = new QHBoxLayout;
    m_useBundled = new QPushButton(tr("Use bundled"), dataBox);
    m_useBundled->setObjectName(QStringLiteral("useBundledButton"));
    m_loadEmbeddings = new QPushButton(tr("Load embeddings…"), dataBox);
    m_loadEmbeddings->setObjectName(QStringLiteral("loadEmbeddingsButton"));
    erow->addWidget(m_useBundled);
    erow->addWidget(m_loadEmbeddings);
    df->addRow(erow);
    m_backend = combo(dataBox, "backendCombo",
                      {{tr("CPU (Eigen)"), 0}, {tr("GPU (Qt RHI: Vulkan / OpenGL)"), 1}, {tr("Auto"), 2}});
    m_backend->setItemData(1, tr("Compute shaders through Qt RHI; any failure falls back to the CPU and the status bar says why."),
                           Qt::ToolTipRole);
    m_backend->setItemData(2, tr("The GPU for large inputs on a hardware GPU, else the CPU; the status bar names what computed."),
                           Qt::ToolTipRole);
    df->addRow(tr("Backend"), m_backend);
    m_numbers = new QCheckBox(tr("Numbers in cells"), dataBox);
    m_numbers->setObjectName(QStringLiteral("numbersCheck"));
    m_numbers->setChecked(true);
    df->addRow(m_numbers);
    outer->addWidget(dataBox);
    // what a head count that does not divide d_model does, under every control: shown between the
    // heads' rows it moved every control below them as the count was stepped (the d_head line
    // marks it, at its place)
    m_headsNote = note(this);
    m_headsNote->setObjectName(QStringLiteral("headsNote"));
    m_headsNote->setStyleSheet(QStringLiteral("color: #b05a00"));
    m_headsNote->setVisible(false);
    outer->addWidget(m_headsNote);
    outer->addStretch(1);

    const auto changed = [this] { emitSettings(); };
    connect(m_heads, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(m_dHead, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(m_scale, qOverload<int>(&QComboBox::currentIndexChanged), this, changed);
    connect(m_temperature, &QSlider::valueChanged, this, changed);
    connect(m_norm, qOverload<int>(&QComboBox::currentIndexChanged), this, changed);
    connect(m_mask, qOverload<int>(&QComboBox::currentIndexChanged), this, changed);
    connect(m_maskMethod, qOverload<int>(&QComboBox::currentIndexChanged), this, changed);
    connect(m_projection, qOverload<int>(&QComboBox::currentIndexChanged), this, changed);
    connect(m_backend, qOverload<int>(&QComboBox::currentIndexChanged), this, changed);
    connect(m_projSeed, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(m_initScheme, qOverload<int>(&QComboBox::currentIndexChanged), this, changed);
    connect(m_drawOrder, qOverload<int>(&QComboBox::currentIndexChanged), this, changed);
    connect(m_outMode, qOverload<int>(&QComboBox::currentIndexChanged), this, changed);
    connect(m_outWidth, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(m_dropout, qOverload<double>(&QDoubleSpinBox::valueChanged), this, changed);
    connect(m_dropoutSeed, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(m_headDisplay, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        updateDerived();
        if (!m_blockSignals)
            emit headDisplayChanged(headDisplay());
    });
    connect(m_head, qOverload<int>(&QSpinBox::valueChanged), this, [this](int h) {
        showKeyValueGroup();
        if (!m_blockSignals)
            emit headChanged(h);
    });
    connect(m_layer, qOverload<int>(&QSpinBox::valueChanged), this, [this](int l) {
        if (!m_blockSignals)
            emit layerChanged(l);
    });
    connect(m_numbers, &QCheckBox::toggled, this, &ControlPanel::showNumbersChanged);
    connect(m_clearMask, &QPushButton::clicked, this, &ControlPanel::clearCustomMaskRequested);
    connect(m_loadProjections, &QPushButton::clicked, this, &ControlPanel::loadProjectionsRequested);
    connect(m_loadEmbeddings, &QPushButton::clicked, this, &ControlPanel::loadEmbeddingsRequested);
    connect(m_useBundled, &QPushButton::clicked, this, &ControlPanel::useBundledRequested);
    greyLabelsWithFields(this);
    updateDerived();
}

ComputeSettings ControlPanel::settings() const
{
    ComputeSettings s;
    s.numHeads = m_heads->value();
    s.dHead = m_dHead->isEnabled() ? m_dHead->value() : 0;
    s.scaleRule = ScaleRule(m_scale->currentData().toInt());
    s.temperature = temperatureForSlider(m_temperature->value());
    s.normalization = Normalization(m_norm->currentData().toInt());
    s.mask = MaskChoice(m_mask->currentData().toInt());
    s.maskMethod = MaskMethod(m_maskMethod->currentData().toInt());
    s.projection = ProjectionMode(m_projection->currentData().toInt());
    s.projectionSeed = quint64(m_projSeed->value());
    s.initScheme = InitScheme(m_initScheme->currentData().toInt());
    s.drawOrder = DrawOrder(m_drawOrder->currentData().toInt());
    const int outMode = m_outMode->currentData().toInt();
    s.outWidth = outMode == 1 ? m_outWidth->value() : outMode;
    if (s.projection == ProjectionMode::File) {
        s.loadedProjections = m_loaded;
        s.projectionSource = m_loadedSource;
    }
    s.dropout = m_dropout->value();
    s.dropoutSeed = quint64(m_dropoutSeed->value());
    static const char *backends[] = {"cpu", "gpu", "auto"};
    s.backend = QString::fromLatin1(backends[std::clamp(m_backend->currentData().toInt(), 0, 2)]);
    s.stack = m_stack->settings();
    return s;
}

void ControlPanel::setSettings(const ComputeSettings &s)
{
    m_blockSignals = true;
    m_backend->setCurrentIndex(s.backend == QLatin1String("gpu") ? 1 : s.backend == QLatin1String("auto") ? 2 : 0);
    m_heads->setValue(s.numHeads);
    m_dHead->setValue(s.dHead);
    m_scale->setCurrentIndex(m_scale->findData(int(s.scaleRule)));
    m_temperature->setValue(sliderForTemperature(s.temperature));
    m_norm->setCurrentIndex(m_norm->findData(int(s.normalization)));
    m_mask->setCurrentIndex(m_mask->findData(int(s.mask)));
    m_maskMethod->setCurrentIndex(m_maskMethod->findData(int(s.maskMethod)));
    m_projection->setCurrentIndex(m_projection->findData(int(s.projection)));
    m_projSeed->setValue(int(s.projectionSeed));
    m_initScheme->setCurrentIndex(m_initScheme->findData(int(s.initScheme)));
    m_drawOrder->setCurrentIndex(m_drawOrder->findData(int(s.drawOrder)));
    m_outMode->setCurrentIndex(m_outMode->findData(s.outWidth > 0 ? 1 : s.outWidth < 0 ? -1 : 0));
    if (s.outWidth > 0)
        m_outWidth->setValue(s.outWidth);
    m_dropout->setValue(s.dropout);
    m_dropoutSeed->setValue(int(s.dropoutSeed));
    m_stack->setSettings(s.stack);
    if (s.loadedProjections) {
        m_loaded = s.loadedProjections;
        m_loadedSource = s.projectionSource;
    }
    m_blockSignals = false;
    emitSettings();
}

bool ControlPanel::showNumbers() const { return m_numbers->isChecked(); }

void ControlPanel::setShowNumbers(bool show) { m_numbers->setChecked(show); }

HeadDisplay ControlPanel::headDisplay() const { return HeadDisplay(m_headDisplay->currentData().toInt()); }

void ControlPanel::setHeadDisplay(HeadDisplay d)
{
    m_blockSignals = true;
    m_headDisplay->setCurrentIndex(m_headDisplay->findData(int(d)));
    m_blockSignals = false;
    updateDerived();
}

void ControlPanel::setSelectedHead(int head)
{
    if (head < 0)
        return;
    m_blockSignals = true;
    m_head->setValue(head);
    m_blockSignals = false;
}

void ControlPanel::setEncoderDecoder(bool on)
{
    m_attention->setVisible(on);
    m_attentionLabel->setVisible(on);
}

AttentionKind ControlPanel::attentionKind() const { return AttentionKind(m_attention->currentData().toInt()); }

void ControlPanel::setAttentionKind(AttentionKind kind)
{
    const int i = m_attention->findData(int(kind));
    if (i < 0 || i == m_attention->currentIndex())
        return;
    m_blockSignals = true;
    m_attention->setCurrentIndex(i);
    m_blockSignals = false;
}

void ControlPanel::setLayerCount(int layers)
{
    layers = std::max(1, layers);
    // called on every snapshot: QSpinBox::setMaximum and setValue redraw and lay out the panel
    // again even when nothing changes
    if (m_layer->maximum() == layers - 1 && m_layerLabel->text() == tr("of %1").arg(layers))
        return;
    m_blockSignals = true;
    m_layer->setMaximum(layers - 1);
    m_blockSignals = false;
    m_layer->setEnabled(layers > 1);
    m_layer->setToolTip(layers > 1 ? tr("The layer every view shows (0 = the first, next to the embeddings)")
                                   : tr("One attention layer: nothing to choose (open a model, or a stack of "
                                        "depth 2 or more)"));
    m_layerLabel->setText(tr("of %1").arg(layers));
}

void ControlPanel::setShownLayer(int layer)
{
    if (m_layer->value() == layer)
        return;
    m_blockSignals = true;
    m_layer->setValue(layer);
    m_blockSignals = false;
}

int ControlPanel::shownLayer() const { return m_layer->value(); }

void ControlPanel::setModel(const ModelInfo *info)
{
    const bool on = info != nullptr;
    m_blockSignals = true;
    if (on && !m_modelMode) {
        m_wordVectorHeads = m_heads->value();
        m_wordVectorMask = m_mask->currentData().toInt();
    }
    if (!on && m_modelMode)
        m_mask->setCurrentIndex(m_mask->findData(m_wordVectorMask));
    m_modelMode = on;
    m_modelCausal = on && info->causal;
    m_modelName = on ? QString::fromStdString(info->name) : QString();
    m_kvGroup = on && info->kvHeads > 0 && info->kvHeads < info->heads ? info->heads / info->kvHeads : 1;
    if (on) { // what the model multiplies q·k by (Architecture::attentionScale; 0: 1/√d_head)
        const Architecture &a = info->architecture;
        const double scale = a.attentionScale;
        const int dHead = info->dHead > 0 ? info->dHead : a.dHead;
        if (scale == 1.0) {
            m_modelScaleText = tr("none (× 1)");
            m_modelScaleWhy = a.positions == PositionKind::RelativeBuckets
                                  ? tr("%1 does not divide q·k by √d_head: T5's initialisation folds that factor into W_q. "
                                       "Scaling applies to the word vectors")
                                        .arg(m_modelName)
                                  : tr("%1 does not scale q·k. Scaling applies to the word vectors").arg(m_modelName);
        } else if (scale <= 0.0 || (dHead > 0 && std::abs(scale * std::sqrt(double(dHead)) - 1.0) < 1e-12)) {
            m_modelScaleText = tr("1/√d_head = 1/√%1").arg(dHead);
            m_modelScaleWhy = tr("%1 divides q·k by √d_head, as it was trained. Scaling applies to the word vectors").arg(m_modelName);
        } else {
            m_modelScaleText = tr("1/√%1 (× %2)").arg(1.0 / (scale * scale), 0, 'g', 6).arg(scale, 0, 'g', 4);
            m_modelScaleWhy = tr("%1 multiplies q·k by %2 (its config's own factor, not 1/√d_head = 1/√%3), as it was "
                                 "trained. Scaling applies to the word vectors")
                                  .arg(m_modelName)
                                  .arg(scale, 0, 'g', 6)
                                  .arg(dHead);
        }
    }
    showKeyValueGroup();
    m_heads->setValue(on ? std::max(1, info->heads) : m_wordVectorHeads);
    m_blockSignals = false;
    emitSettings();
}

// Grouped-query attention: the head chooser says which key/value head the shown query head reads
// and which query heads share it.
void ControlPanel::showKeyValueGroup()
{
    if (m_kvGroup <= 1) {
        m_head->setSuffix(QString());
        m_head->setToolTip(QString());
        return;
    }
    const int h = m_head->value(), kv = h / m_kvGroup;
    m_head->setSuffix(tr("  · kv %1").arg(kv));
    m_head->setToolTip(tr("Grouped-query attention: query heads %1–%2 share key/value head %3 (their keys and values are the same; "
                          "their queries differ)")
                           .arg(kv * m_kvGroup)
                           .arg((kv + 1) * m_kvGroup - 1)
                           .arg(kv));
}

void ControlPanel::applyModelMode()
{
    if (m_stack && m_projBox && m_wordVectorsOnly) { // (not while the panel is being built)
        m_stack->setVisible(!m_modelMode);
        m_projBox->setVisible(!m_modelMode);
        m_wordVectorsOnly->setVisible(m_modelMode);
        m_wordVectorsOnly->setText(tr("%1 has its own layers and trained W_q, W_k, W_v, W_o: the transformer stack "
                                      "and the projections apply to the word vectors (Model ▸ Word vectors).")
                                       .arg(m_modelName));
    }
    if (!m_modelMode) {
        // give back the tooltips; updateDerived() has just set the enabled state of the widgets it
        // manages, the others were always enabled (the bundled button: when this build has the table)
        for (QWidget *w : findChildren<QWidget *>()) {
            if (!w->property("modelWhy").isValid())
                continue;
            w->setToolTip(w->property("oldToolTip").toString());
            w->setProperty("modelWhy", QVariant());
            if (w == m_useBundled)
                w->setEnabled(w->property("bundledAvailable").toBool());
            else if (w == m_heads || w == m_scale || w == m_norm || w == m_dropout || w == m_dropoutSeed
                     || w == m_stack || w == m_loadEmbeddings || w == m_mask)
                w->setEnabled(true);
        }
        if (m_modelScale) { // (built after m_scale)
            m_scale->setVisible(true);
            m_modelScale->setVisible(false);
        }
        return;
    }
    const QString model = m_modelName;
    const auto off = [](QWidget *w, const QString &why) {
        if (!w->property("modelWhy").isValid())
            w->setProperty("oldToolTip", w->toolTip());
        w->setProperty("modelWhy", why);
        w->setEnabled(false);
        w->setToolTip(why);
    };
    off(m_heads, tr("%1 has its own heads: the head count comes from its config.json").arg(model));
    off(m_dHead, tr("%1 has its own head width (head_dim in its config.json)").arg(model));
    off(m_scale, m_modelScaleWhy);
    m_scale->setVisible(false);
    m_modelScale->setText(m_modelScaleText);
    m_modelScale->setToolTip(m_modelScaleWhy);
    m_modelScale->setVisible(true);
    off(m_temperature, tr("Temperature applies to the word-vector attention, not to %1").arg(model));
    off(m_norm, tr("%1 was trained with softmax; other normalizations apply to the word vectors").arg(model));
    off(m_maskMethod, tr("%1 masks with −∞ before softmax, as it was trained").arg(model));
    // the model's own mask, plus padding where tokens were clicked; nothing else applies to it
    const auto chosen = MaskChoice(m_mask->currentData().toInt());
    const bool padding = chosen == MaskChoice::Padding || chosen == MaskChoice::CausalPadding;
    const MaskChoice own = m_modelCausal ? (padding ? MaskChoice::CausalPadding : MaskChoice::Causal)
                                         : (padding ? MaskChoice::Padding : MaskChoice::None);
    if (own != chosen) {
        const QSignalBlocker block(m_mask);
        m_mask->setCurrentIndex(m_mask->findData(int(own)));
    }
    off(m_mask, m_modelCausal ? tr("%1 is causal: each token attends only to itself and earlier tokens, as it was "
                                   "trained. Click a token to mask it as padding.")
                                    .arg(model)
                              : tr("%1 attends in both directions, as it was trained.").arg(model));
    off(m_dropout, tr("A trained model runs without dropout at inference; dropout applies to the word vectors"));
    off(m_dropoutSeed, tr("A trained model runs without dropout at inference; dropout applies to the word vectors"));
    for (QWidget *w : {static_cast<QWidget *>(m_projection), static_cast<QWidget *>(m_projSeed),
                       static_cast<QWidget *>(m_initScheme), static_cast<QWidget *>(m_drawOrder),
                       static_cast<QWidget *>(m_outMode), static_cast<QWidget *>(m_outWidth),
                       static_cast<QWidget *>(m_loadProjections)})
        off(w, tr("%1 uses its own trained W_q, W_k, W_v, W_o").arg(model));
    off(m_stack, tr("%1 has its own layers; the stack settings apply to the word vectors").arg(model));
    if (!m_useBundled->property("modelWhy").isValid())
        m_useBundled->setProperty("bundledAvailable", m_useBundled->isEnabled());
    off(m_useBundled, tr("%1 reads its own token embeddings; word vectors apply to the word-vector attention "
                         "(Model ▸ Word vectors)").arg(model));
    off(m_loadEmbeddings, tr("%1 reads its own token embeddings; word vectors apply to the word-vector attention "
                             "(Model ▸ Word vectors)").arg(model));
    m_headsNote->setVisible(false);
    m_dHeadLabel->setText(tr("fixed by %1").arg(model));
}

void ControlPanel::setDModel(int dModel)
{
    m_dModel = dModel;
    updateDerived();
}

void ControlPanel::setBundledAvailable(bool available, const QString &why)
{
    m_useBundled->setEnabled(available);
    m_useBundled->setToolTip(available ? tr("Use the English word vectors compiled into attnviz") : why);
    if (!available)
        m_useBundled->setText(tr("Bundled: not in this build"));
}

void ControlPanel::setTableDescription(const QString &text) { m_tableLabel->setText(text); }

void ControlPanel::setLoadedProjections(std::shared_ptr<const Projections<float>> p, const QString &source)
{
    m_loaded = std::move(p);
    m_loadedSource = source;
    m_blockSignals = true;
    m_projection->setCurrentIndex(m_projection->findData(int(ProjectionMode::File)));
    m_blockSignals = false;
    emitSettings();
}

void ControlPanel::emitSettings()
{
    updateDerived();
    if (!m_blockSignals)
        emit settingsChanged(settings());
}

void ControlPanel::updateDerived()
{
    const ComputeSettings s = settings();
    const bool free = s.projection != ProjectionMode::Identity;
    m_dHead->setEnabled(free);
    const int dHead = free && s.dHead > 0 ? s.dHead : autoHeadWidth(m_dModel, s.numHeads);
    m_dHeadLabel->setText(m_dModel <= 0 ? QString() : tr("d_head = %1 (d_model %2)").arg(dHead).arg(m_dModel));
    QString problem = headsProblem(m_dModel, s.numHeads, free ? s.dHead : 0, s.projection);
    if (problem.isEmpty())
        problem = unequalHeadsNote(m_dModel, s.numHeads, free ? s.dHead : 0, s.projection);
    m_headsNote->setText(problem);
    m_headsNote->setVisible(!problem.isEmpty());
    m_dHeadLabel->setToolTip(problem);
    m_head->setMaximum(std::max(0, s.numHeads - 1));
    m_head->setEnabled(headDisplay() == HeadDisplay::One && !m_headElsewhere);
    const bool temp = s.scaleRule == ScaleRule::Temperature;
    m_temperature->setEnabled(temp);
    m_temperatureLabel->setEnabled(temp);
    if (m_temperatureRowLabel)
        m_temperatureRowLabel->setEnabled(temp);
    m_temperatureLabel->setText(QStringLiteral("T = %1").arg(s.temperature, 0, 'f', s.temperature < 1 ? 2 : 1));
    const bool causal = s.mask == MaskChoice::Causal || s.mask == MaskChoice::CausalPadding || s.mask == MaskChoice::Padding
        || s.mask == MaskChoice::Custom;
    m_maskMethod->setEnabled(causal && s.normalization == Normalization::Softmax);
    m_maskMethod->setToolTip(s.normalization == Normalization::Softmax
                                 ? tr("How masked keys are removed under softmax (seed 001 shows both)")
                                 : tr("Only softmax has a choice: sum and cosine zero the masked scores."));
    m_clearMask->setEnabled(s.mask == MaskChoice::Custom);
    const bool random = s.projection == ProjectionMode::Random && !s.stack.enabled();
    m_projSeed->setEnabled(random);
    m_initScheme->setEnabled(random);
    m_drawOrder->setEnabled(random);
    m_outMode->setEnabled(random);
    m_outWidth->setEnabled(random && s.outWidth > 0);
    m_loadProjections->setEnabled(!s.stack.enabled());
    m_projection->setEnabled(!s.stack.enabled()); // a stack has its own weights
    if (s.stack.enabled()) {
        m_dHead->setEnabled(false);
        m_headsNote->setText(stackHeadsProblem(m_dModel, s.numHeads));
        m_headsNote->setVisible(!m_headsNote->text().isEmpty());
    }
    m_projSource->setText(m_loaded ? tr("Loaded: %1").arg(m_loadedSource) : tr("No projection file loaded."));
    applyModelMode();
}

} // namespace attnviz::ui
