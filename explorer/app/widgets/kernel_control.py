"""The Attention panel's kernel control: f_kappa of A = Z^-1 f_kappa(S) for the selected layer.

    f(S) = exp(S) (the model's softmax), S (linear), max(0, S) (relu) or exp(S / tau)

Choosing one replaces the layer's own kernel experiment in the session's list (the same
intervention.Experiment values the Experiments dock lists); the combo shows the kernel the
experiments that are on use for the layer (intervention.active(...).kernel_of).
"""
from __future__ import annotations

from PySide6.QtCore import QSignalBlocker
from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QHBoxLayout, QLabel, QWidget

from explorer.core.intervention import SOFTMAX, Experiment, Intervention, Kernel, KernelChoice, active

CHOICES = ("model's softmax", "linear", "relu", "exp(S/τ)")


def is_layer_kernel(experiment: Experiment, layer: int, where: str) -> bool:
    """An experiment that only sets the kernel of this one layer (what the control adds and replaces)."""
    i = experiment.intervention
    return (len(i.kernels) == 1 and i.kernels[0].layers == (layer,) and i.kernels[0].where == where
            and i == Intervention(kernels=i.kernels))


def with_kernel(experiments, layer: int, where: str, kernel: Kernel) -> tuple[Experiment, ...]:
    """The list with the layer's own kernel experiment replaced by `kernel`: dropped for the model's
    softmax, unless another experiment that is on would still change the layer (then softmax is set)."""
    kept = tuple(e for e in experiments if not is_layer_kernel(e, layer, where))
    if kernel == SOFTMAX and active(kept).kernel_of(layer, where) == SOFTMAX:
        return kept
    return kept + (Experiment(Intervention(kernels=(KernelChoice(kernel, (layer,), where),))),)


class KernelControl(QWidget):
    """A combo of kernels and a spin box for tau; `apply(layer, where)` writes the choice to the session."""

    def __init__(self, session, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self.layer, self.where = 0, "self"
        self.combo = QComboBox()
        self.combo.addItems(CHOICES)
        self.combo.setToolTip("f_κ of A = Z⁻¹ f_κ(S) in the selected layer (an experiment: see the Experiments dock)")
        self.tau = QDoubleSpinBox()
        self.tau.setRange(0.05, 100.0)
        self.tau.setValue(2.0)
        self.tau.setPrefix("τ ")
        self.tau.setToolTip("the temperature of exp(S / τ)")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel("kernel"))
        row.addWidget(self.combo)
        row.addWidget(self.tau)
        self.combo.currentIndexChanged.connect(lambda _i: self._chosen())
        self.tau.valueChanged.connect(lambda _v: self._chosen())
        session.experiments_changed.connect(lambda _e: self.show_layer(self.layer, self.where))

    def kernel(self) -> Kernel:
        index = self.combo.currentIndex()
        if index == 3:
            return Kernel("exp", float(self.tau.value()))
        return SOFTMAX if index == 0 else Kernel(CHOICES[index])

    def show_layer(self, layer: int, where: str) -> None:
        """Show the kernel the experiments that are on use for (layer, where)."""
        self.layer, self.where = layer, where
        kernel = active(self.session.experiments).kernel_of(layer, where)
        with QSignalBlocker(self.combo), QSignalBlocker(self.tau):
            if kernel.name == "exp" and not kernel.is_model_softmax:
                self.combo.setCurrentIndex(3)
                self.tau.setValue(kernel.temperature)
            else:
                self.combo.setCurrentIndex(0 if kernel.is_model_softmax else CHOICES.index(kernel.name))
        self.tau.setEnabled(self.combo.currentIndex() == 3)

    def _chosen(self) -> None:
        self.tau.setEnabled(self.combo.currentIndex() == 3)
        kernel = self.kernel()
        if active(self.session.experiments).kernel_of(self.layer, self.where) != kernel:
            self.session.set_experiments(with_kernel(self.session.experiments, self.layer, self.where, kernel))
