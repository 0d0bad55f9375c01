"""mark_step insertion on realistic training loops (HPU201)."""

import textwrap

import pytest

from tests.conftest import port, ported

MS = "htcore.mark_step()"


def lines_after(out: str, needle: str) -> list[str]:
    """The stripped line following each line containing ``needle``."""
    lines = out.splitlines()
    return [lines[i + 1].strip() for i, line in enumerate(lines) if needle in line and i + 1 < len(lines)]


def run(code, **kwargs):
    return ported(textwrap.dedent(code), select=["HPU201"], **kwargs)


def test_gan_with_two_optimizers():
    out = run(
        """
        import torch
        optimizerD = torch.optim.Adam(netD.parameters())
        opt_g = torch.optim.Adam(netG.parameters())
        for real in loader:
            netD.zero_grad()
            errD = criterion(netD(real), ones) + criterion(netD(netG(z).detach()), zeros)
            errD.backward()
            optimizerD.step()
            netG.zero_grad()
            errG = criterion(netD(netG(z)), ones)
            errG.backward()
            opt_g.step()
        """
    )
    assert lines_after(out, "errD.backward()") == [MS]
    assert lines_after(out, "optimizerD.step()") == [MS]
    assert lines_after(out, "errG.backward()") == [MS]
    assert lines_after(out, "opt_g.step()") == [MS]
    assert out.count(MS) == 4


def test_rl_loop_env_step_gets_nothing():
    out = run(
        """
        import torch
        optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
        for episode in range(1000):
            state, ep_reward = env.reset(), 0
            for t in range(1, 10000):
                action = select_action(state)
                state, reward, done, _ = env.step(action)
                if done:
                    break
            optimizer.zero_grad()
            policy_loss = torch.cat(policy.saved).sum()
            policy_loss.backward()
            optimizer.step()
        """
    )
    assert "env.step(action)\n" in out and lines_after(out, "env.step(action)") == ["if done:"]
    assert out.count(MS) == 2


def test_lbfgs_closure():
    out = run(
        """
        import torch
        optimizer = torch.optim.LBFGS(model.parameters(), lr=0.8)
        for i in range(15):
            def closure():
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                return loss
            optimizer.step(closure)
        """
    )
    assert lines_after(out, "loss.backward()") == [MS]
    assert lines_after(out, "optimizer.step(closure)") == [MS]


def test_deepspeed_engine_steps():
    out = run(
        """
        import deepspeed
        model_engine, optimizer, _, lr_scheduler = deepspeed.initialize(args=args, model=model, model_parameters=params)
        for step, batch in enumerate(data_loader):
            loss = model_engine(batch)
            model_engine.backward(loss)
            model_engine.step()
            lr_scheduler.step()
        """
    )
    assert lines_after(out, "model_engine.backward(loss)") == [MS]
    assert lines_after(out, "model_engine.step()") == [MS]
    assert lines_after(out, "lr_scheduler.step()") == []  # last line, nothing after it
    assert out.count(MS) == 2


def test_step_wrapped_in_a_helper_and_attributes():
    out = run(
        """
        import torch

        class Trainer:
            def train_step(self, batch):
                loss = self.model(batch).mean()
                self.accelerator.backward(loss)
                self.optimizer.step()
                self.lr_scheduler.step()
                self.optimizer.zero_grad()

            def setup(self):
                self.optimizer = torch.optim.AdamW(self.model.parameters())
                self.lr_scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, 10)
        """
    )
    assert lines_after(out, "self.accelerator.backward(loss)") == [MS]
    assert lines_after(out, "self.optimizer.step()") == [MS]
    assert lines_after(out, "self.lr_scheduler.step()") == ["self.optimizer.zero_grad()"]


def test_schedulers_by_construction_even_with_an_optimizer_like_name():
    out = run(
        """
        from torch.optim.lr_scheduler import OneCycleLR
        opt_sched = OneCycleLR(optimizer, max_lr=0.1)
        loss.backward()
        optimizer.step()
        opt_sched.step()
        """
    )
    assert lines_after(out, "optimizer.step()") == [MS]
    assert out.rstrip().endswith("opt_sched.step()")


def test_gradient_accumulation_with_autocast_and_clipping():
    out = run(
        """
        import torch
        scaler = torch.cuda.amp.GradScaler()
        for i, (x, y) in enumerate(loader):
            with torch.autocast("cuda"):
                loss = model(x, y) / accum_steps
            scaler.scale(loss).backward()
            if (i + 1) % accum_steps == 0:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad(set_to_none=True)
        """
    )
    assert lines_after(out, "scaler.scale(loss).backward()") == [MS]
    assert lines_after(out, "scaler.step(optimizer)") == [MS]
    assert lines_after(out, "scaler.update()") == ["optimizer.zero_grad(set_to_none=True)"]
    assert out.count(MS) == 2


def test_apex_scale_loss_and_autograd_backward():
    out = run(
        """
        import torch
        from apex import amp
        with amp.scale_loss(loss, optimizer) as scaled_loss:
            scaled_loss.backward()
        torch.autograd.backward([l1, l2])
        """
    )
    assert lines_after(out, "scaled_loss.backward()") == [MS]
    assert lines_after(out, "torch.autograd.backward([l1, l2])") == [MS]
    assert "    htcore.mark_step()\ntorch.autograd" in out  # same indentation as its anchor


@pytest.mark.parametrize(
    "existing",
    [
        "import habana_frameworks.torch.core as htcore\n{x}\nhtcore.mark_step()\n",
        "import habana_frameworks.torch.core\n{x}\nhabana_frameworks.torch.core.mark_step()\n",
        "from habana_frameworks.torch.core import mark_step\n{x}\nmark_step()\n",
        "import habana_frameworks.torch.core as hc\n{x}\n# sync the graph\nhc.mark_step()\n",
        "import habana_frameworks.torch.core as hc\n{x}; hc.mark_step()\n",
    ],
)
def test_existing_mark_step_in_any_spelling_is_recognised(existing):
    code = existing.format(x="loss.backward()")
    result = port(code, select=["HPU201", "HPU001"])
    assert result.new_source is None and result.findings == []


def test_existing_alias_is_reused_and_import_added_once():
    out = run("import habana_frameworks.torch.core as hc\nloss.backward()\noptimizer.step()\n")
    assert out == "import habana_frameworks.torch.core as hc\nloss.backward()\nhc.mark_step()\noptimizer.step()\nhc.mark_step()\n"
    fresh = ported("loss.backward()\noptimizer.step()\n")
    assert fresh.count("import habana_frameworks.torch.core as htcore") == 1


def test_unknown_step_receiver_is_reported_not_guessed():
    result = port(
        "def train(trainer, model):\n    loss = model()\n    loss.backward()\n    trainer.step()\n",
        select=["HPU201"],
    )
    out = result.new_source.decode()
    assert lines_after(out, "trainer.step()") == []
    unsure = [f for f in result.findings if "cannot tell" in f.message]
    assert len(unsure) == 1 and unsure[0].line == 4 and unsure[0].needs_person


def test_unknown_step_without_backward_is_not_reported():
    result = port("def walk(sim):\n    sim.step()\n    counter.step()\n", select=["HPU201"])
    assert result.findings == [] and result.new_source is None


def test_eager_mode_inserts_nothing():
    result = port("loss.backward()\noptimizer.step()\n", select=["HPU201"], mode="eager")
    assert result.findings == [] and result.new_source is None


def test_crlf_file_gets_crlf_insertions():
    from hpu_port.engine import port_source
    from tests.conftest import make_ruleset

    source = b"def f():\r\n    loss.backward()\r\n"
    out = port_source("f.py", source, make_ruleset(["HPU201"])).new_source
    assert out == b"import habana_frameworks.torch.core as htcore\r\n\r\ndef f():\r\n    loss.backward()\r\n    htcore.mark_step()\r\n"


def test_double_run_is_stable_on_a_full_loop():
    code = textwrap.dedent(
        """
        import torch
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            opt.zero_grad(); loss = crit(model(x), y); loss.backward(); opt.step()
            if debug: loss.backward(retain_graph=True)
        """
    )
    once = ported(code)
    assert ported(once) == once
    assert once.count(MS) == 3


@pytest.mark.parametrize(
    "guard",
    [
        "if args.use_lazy_mode:\n    htcore.mark_step()\n",
        "if args.use_lazy_mode: htcore.mark_step()\n",
        "if lazy:\n    htcore.mark_step()\n    log('flushed')\n",
    ],
)
def test_mark_step_under_a_flag_of_the_source_is_recognised(guard):
    code = "import habana_frameworks.torch.core as htcore\nloss.backward()\n" + guard + "optimizer.step()\n" + guard
    result = port(code, select=["HPU201"])
    assert result.new_source is None and result.findings == []


def test_a_guard_with_an_else_or_another_first_call_is_not_a_mark_step():
    code = (
        "import habana_frameworks.torch.core as htcore\n"
        "loss.backward()\nif lazy:\n    log('x')\n    htcore.mark_step()\n"
        "optimizer.step()\nif lazy:\n    htcore.mark_step()\nelse:\n    pass\n"
    )
    out = ported(code, select=["HPU201"])
    assert lines_after(out, "loss.backward()") == [MS]
    assert lines_after(out, "optimizer.step()") == [MS]


def test_a_module_with_the_guarded_import_gets_guarded_mark_steps_and_none_twice(tmp_path):
    """A trainer in a package whose loop calls `self.backward()`, a method
    ending with the backward pass: one mark_step, in that method, guarded like
    the import; ported again, nothing changes."""
    from click.testing import CliRunner

    from hpu_port.cli import main

    package = tmp_path / "metrics"
    package.mkdir()
    (package / "__init__.py").write_text("")
    trainer = package / "trainer.py"
    trainer.write_text(
        "import torch\n\n\nclass Trainer:\n"
        "    def forward_and_backward(self):\n        self.compute()\n        self.backward()\n        self.clip()\n\n"
        "    def backward(self):\n        self.losses[\"total\"].backward()\n"
    )
    for _ in range(2):
        result = CliRunner().invoke(main, ["rewrite", "--no-cache", str(tmp_path)])
        assert result.exit_code == 0, result.output
        text = trainer.read_text()
        assert text.count("mark_step()") == 1
        assert "        self.losses[\"total\"].backward()\n        if htcore is not None:\n            htcore.mark_step()\n" in text
