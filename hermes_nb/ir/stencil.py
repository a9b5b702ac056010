"""A fused stencil pipeline as data: the kernel description behind ``fused_stencil``.

Values are whole images of the node's shape ``(..., H, W)``: value 0 is the
kernel's input, and stage ``i`` produces value ``i + 1``; the last value is the
result. A :class:`ConvStage` correlates one earlier value over the last two axes,
applying its border mode to *that value* (so a Sobel after a blur reflects the
blurred image, exactly as the stages run one after another would). A
:class:`PointStage` runs an elementwise :class:`Program` whose inputs are earlier
values. Code generators keep intermediate values in tiles or line buffers and
write only the result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hermes_nb.ir.program import Program


@dataclass(frozen=True)
class ConvStage:
    source: int  # index of the value it reads
    weights: tuple[tuple[float, ...], ...]  # kh × kw, both odd; out[y,x] = Σ w[i][j]·in[y+i-kh//2, x+j-kw//2]
    separable: tuple[tuple[float, ...], tuple[float, ...]] | None  # (column taps along H, row taps along W)
    border: str  # reflect101 | reflect | replicate | constant (zeros)
    #: the user's name of the stage ("gaussian_blur", "sobel") and its short form ("blur5"):
    #: for plans and diagrams, never the source or the signature
    label: tuple[str, str] = field(default=("conv2d", "conv2d"), compare=False)

    @property
    def radius(self) -> tuple[int, int]:
        return len(self.weights) // 2, len(self.weights[0]) // 2


@dataclass(frozen=True)
class PointStage:
    program: Program  # program input k is value sources[k]
    sources: tuple[int, ...]


Stage = ConvStage | PointStage


@dataclass(frozen=True)
class StencilProgram:
    value_dtypes: tuple[str, ...]  # dtype of value 0 (the input) and of each stage's output
    stages: tuple[Stage, ...]

    @property
    def result(self) -> int:
        return len(self.stages)

    @property
    def signature(self) -> str:
        parts = []
        for s in self.stages:
            if isinstance(s, ConvStage):
                taps = s.separable if s.separable is not None else s.weights
                parts.append(f"conv({s.source},{s.border},{taps!r})")
            else:
                parts.append(f"point({s.sources},{s.program.signature})")
        return f"stencil[{','.join(self.value_dtypes)}]" + ";".join(parts)

    def arguments(self) -> tuple[object, ...]:
        """The point stages' scalar parameters (``Program.arguments``), stage by stage: the
        kernel takes them after its own arguments. Convolution taps stay in the source:
        they fix which taps exist (zeros are skipped) and so the kernel's loops."""
        args: list[object] = []
        for s in self.stages:
            if isinstance(s, PointStage):
                args.extend(s.program.arguments())
        return tuple(args)

    @property
    def template(self) -> StencilProgram:
        """This pipeline with every point stage's ``Program.template``: what code
        generators render."""
        stages = tuple(PointStage(s.program.template, s.sources) if isinstance(s, PointStage)
                       else s for s in self.stages)
        return StencilProgram(self.value_dtypes, stages)

    @property
    def ops(self) -> tuple[str, ...]:
        """The ops this kernel holds, for plans and diagrams."""
        names: list[str] = []
        for s in self.stages:
            names.extend(("conv2d",) if isinstance(s, ConvStage) else s.program.ops)
        return tuple(names)

    @property
    def stage_names(self) -> tuple[str, ...]:
        """The short names of this kernel's stages as the user wrote them ("blur5", "sobel",
        then the point stages' ops)."""
        names: list[str] = []
        for s in self.stages:
            names.extend((s.label[1],) if isinstance(s, ConvStage) else s.program.ops)
        return tuple(names)

    def halo(self) -> tuple[int, int]:
        """How far (rows, columns) the result reaches into the input: the sum of the
        radii along the deepest chain of convolutions."""
        reach = [(0, 0)]
        for s in self.stages:
            if isinstance(s, ConvStage):
                r, c = reach[s.source]
                dr, dc = s.radius
                reach.append((r + dr, c + dc))
            else:
                reach.append((max(reach[i][0] for i in s.sources),
                              max(reach[i][1] for i in s.sources)))
        return reach[-1]
