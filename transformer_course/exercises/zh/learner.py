"""The Chinese lines of :mod:`transformer_course.learner` and :mod:`transformer_course.provenance`: whose code each
file of ``my_transformer/`` is, the fallbacks, the references brought in on purpose (registered by provenance).

The status names (yours, reference, blank, missing, package, fallback) and file names stay as they are: notebook 08
explains them. A fallback line always says 后备 and 不是你的, and a model's line starts with 模型 (tests/test_notebooks.py
reads them so, in both languages).
"""

__all__ = ["ZH"]

ZH: dict[str, str] = {
    # what each status means (provenance.STATUSES)
    "your own code": "你自己的代码",
    "the reference from notebooks/solutions/ (not yours)": "来自 notebooks/solutions/ 的参考答案（不是你的）",
    "not written yet: a stub still raises NotImplementedError": "还没有写好：仍有存根在抛出 NotImplementedError",
    "not there: its notebook's build cell writes it": "文件不存在：由它所在笔记本的构建单元格写出",
    "calls the package's or PyTorch's own implementation (not yours)": "调用的是包或 PyTorch 自带的实现（不是你的）",
    "the package's code, written as a fallback (not yours)": "包的代码，作为后备代码写入（不是你的）",
    # a file that cannot be the learner's
    "{file} is not written yet (missing)": "{file} 还没有写好（文件不存在）",
    "{file} is not written yet (a stub still raises NotImplementedError)": "{file} 还没有写好（仍有存根在抛出 NotImplementedError）",
    "{path} fails: {error} (line {line})": "{path} 出错：{error}（第 {line} 行）",
    "{path} ({where}) fails to build or run: {error} (line {line})": "{path}（{where}）无法搭建或运行：{error}（第 {line} 行）",
    "{name} is not a Python package name; call the folder my_transformer": "{name} 不是合法的 Python 包名；请把文件夹命名为 my_transformer",
    "the folder {name}/ has the name of an installed module ({name}), and importing it would replace that one in "
    "this session; call the folder my_transformer": "文件夹 {name}/ 与一个已安装的模块（{name}）同名，导入它会在本次会话中顶替那个模块；"
    "请把文件夹命名为 my_transformer",
    "unknown file {file!r}; the course writes {files}": "没有文件 {file!r}；课程写出的文件是 {files}",
    "{file} holds {names}, not {name!r}": "{file} 里有 {names}，没有 {name!r}",
    # use_reference
    "no reference for {file} here (notebooks/solutions/my_transformer/ is not in this copy of the course, e.g. a "
    "student release): write {path} yourself in {notebook}'s build cell": "这里没有 {file} 的参考答案（这份课程里没有 "
    "notebooks/solutions/my_transformer/，例如学生版）：请在 {notebook} 的构建单元格里自己写出 {path}",
    "{path} is now the reference from notebooks/solutions/my_transformer/, not yours (notebook 08 will say so); run "
    "{notebook}'s build cell again to write your own": "{path} 现在是来自 notebooks/solutions/my_transformer/ 的参考答案，"
    "不是你的（笔记本 08 会这样标明）；再运行一次 {notebook} 的构建单元格，就能写回你自己的版本",
    # load and fill_missing_files
    "the cells below use the package's {name} (a fallback, not yours)": "下面的单元格改用包的 {name}（后备代码，不是你的）",
    "{why}: {instead}; {notebook} writes it": "{why}：{instead}；{notebook} 会写出它",
    "{why}: {instead}": "{why}：{instead}",
    "{why}: {instead}; fix it in {notebook}": "{why}：{instead}；请在 {notebook} 里改正",
    "{file} has no {name}": "{file} 里没有 {name}",
    "{file} is {status}: the cells below use its {name}": "{file} 是{status}：下面的单元格使用其中的 {name}",
    "{file} was missing: wrote a fallback that uses the package's {names} (not yours); write your own in "
    "{notebook}'s build cell": "{file} 不存在：已写入一个后备文件，使用包的 {names}（不是你的）；"
    "请在 {notebook} 的构建单元格里写出你自己的版本",
    # the learner's model
    "{why}: notebook {notebook} writes it": "{why}：笔记本 {notebook} 会写出它",
    "{why}; fix it in notebook {notebook}": "{why}；请在笔记本 {notebook} 里改正",
    "{file} has no make_model function: notebook {notebook} writes it": "{file} 里没有 make_model 函数：笔记本 {notebook} 会写出它",
    "its output is {shape} for 2 tokens, not (1, 2, tgt_vocab={vocab})": "它对 2 个词元的输出形状是 {shape}，"
    "而不是 (1, 2, tgt_vocab={vocab})",
    "it returned {kind}, not a model with encode, decode and generator": "它返回的是 {kind}，不是带有 encode、decode 和 "
    "generator 的模型",
    "in the model": "模型用到",
    "not in the model": "模型没用到",
    "the model is yours: built by {where} from your files of notebooks 02–07": "模型是你的：由 {where} 用你在笔记本 "
    "02–07 中写的文件搭建",
    "the model is partly yours: built by {where}; yours: {mine}; not yours: {others}": "模型部分是你的：由 {where} "
    "搭建；你的：{mine}；不是你的：{others}",
    "the model is not yours: built by {where} from {others}": "模型不是你的：由 {where} 用 {others} 搭建",
    "no file of the folder": "文件夹外的代码",
    "the model is the package's: transformer_course.make_model (same sizes), not yours": "模型是包的："
    "transformer_course.make_model（尺寸相同），不是你的",
}
