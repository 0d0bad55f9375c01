"""Requirements in `setup()` keywords, and in the module-level lists they name."""

from tests.conftest import port


def findings(code, select="HPU850"):
    return [(f.line, f.column, f.message.split("`")[1]) for f in port(code, select=[select], apply=False).findings]


def test_lists_named_by_the_keywords_are_read_where_they_are_written():
    code = '''
        import setuptools

        base = ["numpy"]
        gpu: list = ["faiss-gpu>=1.7", "cupy-cuda12x"]
        extras = {"all": base + gpu, "gpu": gpu}

        setuptools.setup(name="m", install_requires=base, extras_require=extras)
    '''
    assert findings(code) == [(4, 14, "faiss-gpu>=1.7"), (4, 32, "cupy-cuda12x")]


def test_a_name_the_keywords_do_not_use_is_not_read():
    code = '''
        from setuptools import setup

        docs = ["gpustat"]
        setup(name="m", install_requires=["numpy"])
    '''
    assert findings(code) == []


def test_a_name_assigned_twice_is_read_in_both_places():
    code = '''
        from setuptools import setup

        requires = ["numpy"]
        if GPU:
            pass
        requires = requires + ["flash-attn"]
        setup(name="m", install_requires=requires)
    '''
    assert findings(code) == [(6, 24, "flash-attn")]


def test_the_names_of_extras_are_not_requirements():
    code = '''
        from setuptools import setup

        extras = {"triton": [], "kernels": ["flash-attn"]}
        setup(name="m", extras_require=extras)
    '''
    assert findings(code) == [(3, 37, "flash-attn")]
