"""vmnp's implementation, one module per layer, which the public namespace (``vmnp/__init__.py``)
re-exports. Each module imports at its top only the ones before it, in this order: ``dtypes``,
``public``, ``convert``, ``fallback``, ``ufunc``, ``creation``, ``manip``, ``reductions``,
``linalg``, ``sorting``, ``compare``, ``numeric``, ``counting``, ``sets``, ``methods``. Where a
lower layer calls up (``asarray`` of a list of arrays stacks them, a ufunc's ``reduce`` is a
reduction), the function imports what it needs when it runs."""
