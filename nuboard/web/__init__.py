"""The viewer (`nuboard up`): a Flask app over every project under a root folder.

Imported only by `nuboard up` and the tests; `import nuboard` never loads Flask.
"""
