"""Train a small image classifier on a GPU.

A typical CUDA training script: run `hpu-port rewrite --dry-run` on it to see
what changes for Intel Gaudi.
"""
import argparse
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def parse_args():
    parser = argparse.ArgumentParser(description="Train a classifier")
    parser.add_argument("--device", default="cuda", help="device to train on")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", default="checkpoint.pt")
    return parser.parse_args()


class Net(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc = nn.Linear(64 * 8 * 8, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def fake_cifar(n=512):
    images = torch.randn(n, 3, 32, 32)
    labels = torch.randint(0, 10, (n,))
    return TensorDataset(images, labels)


def log_memory(tag):
    # Peak memory since the last reset, in MiB.
    peak = torch.cuda.max_memory_allocated() / 2**20
    print(f"[{tag}] peak memory {peak:.0f} MiB, reserved {torch.cuda.memory_reserved() / 2**20:.0f} MiB")
    torch.cuda.reset_peak_memory_stats()


def train_one_epoch(model, loader, optimizer, device, epoch):
    model.train()
    for step, (images, labels) in enumerate(loader):
        images = images.to(device, non_blocking=True)
        labels = labels.cuda(non_blocking=True)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        if step % 4 == 0:
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}")


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct = total = 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        correct += (model(images).argmax(1) == labels).sum().item()
        total += labels.numel()
    torch.cuda.synchronize()
    return correct / total


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    torch.cuda.manual_seed_all(args.seed)
    use_cuda = args.device.startswith("cuda") and torch.cuda.is_available()
    device = torch.device(args.device if use_cuda else "cpu")
    print(f"training on {torch.cuda.get_device_name(0) if use_cuda else 'cpu'}")

    train_loader = DataLoader(fake_cifar(), batch_size=args.batch_size, shuffle=True, pin_memory=True)
    val_loader = DataLoader(fake_cifar(128), batch_size=args.batch_size)

    model = Net().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    start_epoch = 0
    if os.path.exists(args.checkpoint):
        state = torch.load(args.checkpoint, map_location="cuda:0")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start_epoch = state["epoch"] + 1

    for epoch in range(start_epoch, args.epochs):
        started = time.time()
        train_one_epoch(model, train_loader, optimizer, device, epoch)
        accuracy = evaluate(model, val_loader, device)
        print(f"epoch {epoch}: accuracy {accuracy:.3f} in {time.time() - started:.1f}s")
        log_memory(f"epoch {epoch}")
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, args.checkpoint)


if __name__ == "__main__":
    main()
