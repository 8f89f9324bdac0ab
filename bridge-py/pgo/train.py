"""The workload vmnp's profile-guided build learns from (`scripts/setup.sh` runs it under an
instrumented build, then builds again with the profile it wrote).

It should look like the NumPy programs vmnp runs, not like any one of them: many small operations
from Python loops (element reads and stores, slices of rows and columns, short element-wise
expressions, small products and reductions, the creation functions), plus large element-wise
expressions that the cpu engine fuses and compiles, on float64, float32 and integer data. Code the
workload never reaches is laid out as cold, so each kind of work a program does should appear here
at least briefly. Run as `python bridge-py/pgo/train.py` with vmnp installed; takes seconds.
"""

import vmnp as np


def small_elementwise(n):
    a = np.linspace(0.1, 1.0, n)
    b = np.linspace(1.0, 2.0, n)
    i = np.arange(n)
    f = a.astype(np.float32)
    for _ in range(60):
        c = a + b
        c = a * 0.5 - b / 3.0
        c = np.sqrt(a) + np.exp(-b) * np.log(b)
        c = np.maximum(a, b) - np.minimum(a, 0.3)
        c = np.where(a > 0.5, a, b)
        c = (a < b) & (b > 1.5)
        c = a**2 + b**0.5 - np.abs(a - b)
        c = np.sin(a) * np.cos(b) + np.tanh(a)
        c = i * 3 + i // 2 - i % 5
        c = f * np.float32(2.0) + f
        c = np.clip(a, 0.2, 0.8)
        c = -a
        a += 0.001
        b *= 0.999
    return float(c.sum())


def slices_and_elements(n):
    M = np.linspace(0.0, 1.0, n * n).reshape(n, n)
    v = np.ones(n)
    s = 0.0
    for k in range(1, n - 1):
        M[k, :] = M[k - 1, :] * 0.5 + M[k + 1, :] * 0.25
        M[:, k] += v * M[k, k] * 0.01
        M[k, 1:-1] -= (M[k - 1, :-2] + M[k - 1, 2:]) * 0.1
        s += M[k, k] + float(M[k, :].sum())
        M[k, k] = s * 1e-6
        v[k] = M[k, k - 1] * 0.5
        x = M[k]
        x = M[1:-1, k]
        x = M[k, ::2]
        s += x[0]
    return s


def triangular_loops(n):
    A = np.linspace(1.0, 2.0, n * n).reshape(n, n) + n * np.eye(n)
    b = np.linspace(0.0, 1.0, n)
    L = np.tril(A)
    x = np.zeros(n)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    for i in range(n):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, n):
            A[i, j] -= A[i, :i] @ A[:i, j]
    C = np.zeros((n, n))
    for i in range(n):
        C[i, : i + 1] *= 0.5
        for k in range(n):
            C[i, : i + 1] += 1.5 * A[k, i] * A[: i + 1, k]
    return float(x.sum() + C.sum())


def orthogonalise(m, n):
    A = np.linspace(0.5, 1.5, m * n).reshape(m, n) + np.eye(m, n)
    Q = np.zeros((m, n))
    R = np.zeros((n, n))
    for k in range(n):
        nrm = np.dot(A[:, k], A[:, k])
        R[k, k] = np.sqrt(nrm)
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, n):
            R[k, j] = np.dot(Q[:, k], A[:, j])
            A[:, j] = A[:, j] - Q[:, k] * R[k, j]
    return float(R.sum())


def recurrences(n):
    y = np.zeros(n)
    r = np.linspace(0.1, 0.9, n)
    alpha, beta = -r[0], 1.0
    y[0] = -r[0]
    for k in range(1, n):
        beta = (1 - alpha * alpha) * beta
        alpha = -(r[k] + np.dot(np.flip(r[:k]), y[:k])) / beta
        y[:k] += alpha * np.flip(y[:k])
        y[k] = alpha
    t = np.zeros(n)
    for k in range(2, n):
        t[k] = 0.5 * t[k - 1] + 0.25 * y[k] - 0.125 * t[k - 2]
    return float(y.sum() + t.sum())


def stencil_steps(n, steps):
    u = np.linspace(0.0, 1.0, n * n).reshape(n, n)
    v = np.zeros_like(u)
    p = np.empty_like(u)
    for _ in range(steps):
        v[1:-1, 1:-1] = 0.2 * (u[1:-1, 1:-1] + u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        u[1:-1, 1:-1] = 0.2 * (v[1:-1, 1:-1] + v[:-2, 1:-1] + v[2:, 1:-1] + v[1:-1, :-2] + v[1:-1, 2:])
        for j in range(1, n - 1):
            p[1:-1, j] = -0.5 / (0.3 * p[1:-1, j - 1] + 2.0)
            u[j, 1:-1] = p[1:-1, j] * u[j - 1, 1:-1] + v[j, 1:-1]
        err = float(np.abs(u - v).max())
        if err < 0:
            break
    return float(u.sum())


def particles(n, steps):
    pos = np.linspace(0.0, 1.0, 3 * n).reshape(n, 3)
    vel = np.zeros((n, 3))
    mass = np.linspace(1.0, 2.0, n).reshape(n, 1)
    for _ in range(steps):
        dx = pos[:, 0:1].T - pos[:, 0:1]
        dy = pos[:, 1:2].T - pos[:, 1:2]
        dz = pos[:, 2:3].T - pos[:, 2:3]
        inv = (dx**2 + dy**2 + dz**2 + 0.01) ** -1.5
        acc = np.stack([(dx * inv) @ mass, (dy * inv) @ mass, (dz * inv) @ mass], axis=1).reshape(n, 3)
        vel += acc * 0.01
        pos += vel * 0.01
        energy = 0.5 * np.sum(mass * vel**2) - np.sum(np.triu(inv, 1))
    return float(energy)


def layers(batch, width, steps):
    x = np.linspace(-1.0, 1.0, batch * width).reshape(batch, width).astype(np.float32)
    w = np.linspace(-0.1, 0.1, width * width).reshape(width, width).astype(np.float32)
    for _ in range(steps):
        h = np.maximum(x @ w + np.float32(0.1), 0)
        e = np.exp(h - np.max(h, axis=-1, keepdims=True))
        x = e / np.sum(e, axis=-1, keepdims=True)
        m = np.mean(x, axis=0)
        s = np.std(x, axis=0)
        x = (x - m) / (s + 1e-5)
    return float(x.sum())


def arrays_and_indexing(n):
    a = np.linspace(0.0, 1.0, n)
    idx = np.arange(0, n, 3)
    total = 0.0
    for _ in range(30):
        mask = a > 0.5
        x = a[mask]
        x = a[idx]
        a[idx] = x * 0.5
        x = np.concatenate((a, a[:5]))
        x = np.hstack((a[:, None], a[:, None]))
        x = np.cumsum(a)
        x = np.argmax(a) + np.count_nonzero(mask)
        x = np.sort(a)[::-1]
        x = np.outer(a[:8], a[:8]).T.copy()
        x = np.zeros((4, n)).sum(axis=1)
        x = np.full(n, 2.0) + np.ones(n, dtype=np.int64)
        x = np.mean(a), np.var(a), a.min(), a.max(), a.item(3)
        x = np.diff(a)
        total += float(np.sum(a * a))
    return total


def kernels(n):
    """Each kind of loop over whole arrays (of every common dtype, element-wise, reductions
    along each axis, scans, sorts, casts), at a size where its loop is where the time goes."""
    a = np.linspace(0.1, 1.0, n)
    b = np.linspace(1.0, 2.0, n)
    M = a.reshape(n // 100, 100)
    f = a.astype(np.float32)
    i = np.arange(n)
    i32 = i.astype(np.int32)
    u8 = (i % 200).astype(np.uint8)
    mask = a > 0.5
    total = 0.0
    for _ in range(3):
        for x in (a, f, M):
            total += float(x.sum() + x.max() + x.min() + x.mean() + x.std() + x.prod() + np.argmax(x))
        for axis in (0, 1):
            total += float(M.sum(axis=axis).sum() + M.max(axis=axis).sum() + M.min(axis=axis).sum())
        for x in (f, a, i, i32, u8):
            y = x * x + x - x // 3 if x.dtype.kind in "iu" else x * x + x - x / 3
            total += float(y.sum() + (x == x).sum() + (x < x[5]).sum() + np.maximum(x, x[7]).sum())
        for g in (np.sqrt, np.exp, np.log, np.sin, np.cos, np.tanh, np.abs, np.floor, np.arctan):
            total += float(g(a).sum() + g(f).sum())
        total += float(np.power(a, 1.7).sum() + np.arctan2(a, b).sum() + np.hypot(a, b).sum())
        total += float((i % 11).sum() + (i32 % 7).sum() + (u8 + u8).sum() + (i << 2).sum() + (i & 5).sum())
        total += float(np.cumsum(a)[-1] + np.cumprod(b[:60])[-1] + np.sort(b)[3] + np.argsort(a)[3])
        total += float(np.where(mask, a, b).sum() + a[mask].sum() + mask.any() + mask.all() + np.count_nonzero(mask))
        total += float(a.astype(np.int64).sum() + i.astype(np.float64).sum() + f.astype(np.float64).sum())
        total += float(M.T.copy().sum() + M[:, ::3].copy().sum() + np.clip(a, 0.2, 0.8).sum())
    return total


def large_expressions(n):
    a = np.linspace(0.1, 1.0, n)
    b = np.linspace(1.0, 2.0, n)
    c = np.linspace(0.5, 0.7, n).reshape(1, n)
    total = 0.0
    for _ in range(3):
        d = np.sqrt(a * b + 1.0) * np.log(b) - np.exp(-a) / (b + a * a)
        e = (d - d.mean()) ** 2 + np.where(d > 0.5, d, 0.0)
        g = (a.reshape(n // 100, 100) * 2.0 + 1.0) @ np.ones(100)
        h = (a.reshape(1, n) + c) * 0.5
        total += float(e.sum() + g.sum() + h.max())
        k = a.reshape(100, n // 100)
        total += float((k[1:-1, 1:-1] + k[:-2, 1:-1] + k[2:, 1:-1] + k[1:-1, :-2] + k[1:-1, 2:]).sum())
    return total


def main():
    for n in (8, 50, 400):
        small_elementwise(n)
        arrays_and_indexing(n)
    for n in (30, 60):
        slices_and_elements(n)
        triangular_loops(n)
        orthogonalise(n + 10, n)
        recurrences(4 * n)
        stencil_steps(n, 4)
        particles(n, 10)
    layers(16, 64, 20)
    for n in (4_000, 200_000):
        kernels(n)
    large_expressions(1_000_000)
    np.flush()


if __name__ == "__main__":
    main()
