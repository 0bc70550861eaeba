/* The compiled helpers of agui_replay's StateManager (optional: agui_replay/_compiled.py falls
 * back to pure Python when this module is not built).
 *
 * A published state is checked to hold only the exact built-in JSON types before its encoded
 * bytes are trusted to say all there is to say about it (orjson also writes enums, UUIDs and
 * subclasses, and writes NaN as null). In Python that check costs about two orjson.dumps of the
 * same state; here it is a walk over the containers that never calls back into Python.
 *
 *   is_plain(value, depth) -> bool
 *       Whether value is made only of dict (str keys), list, tuple, str, int, bool, None and
 *       finite float, nested at most `depth` containers deep.
 *
 *   plain_copy(value, depth) -> copy or None
 *       The same check, returning a copy whose containers are new (tuples become lists, dicts
 *       keep their key order) and whose immutable leaves are value's own objects; None when
 *       value is not plain.
 *
 * Neither runs Python code (exact dicts with str keys compare and hash in C), so the value
 * cannot change under the walk.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

/* The leaves that need no look inside. */
#define SCALAR(t, v) \
    ((t) == &PyUnicode_Type || (t) == &PyLong_Type || (t) == &PyBool_Type || (v) == Py_None)

static int
check(PyObject *value, int room)
{
    PyTypeObject *type = Py_TYPE(value);
    if (SCALAR(type, value))
        return 1;
    if (type == &PyFloat_Type)
        return isfinite(PyFloat_AS_DOUBLE(value));
    if (room <= 0)
        return 0;
    if (type == &PyDict_Type) {
        Py_ssize_t pos = 0;
        PyObject *key, *item;
        while (PyDict_Next(value, &pos, &key, &item)) {
            if (Py_TYPE(key) != &PyUnicode_Type)
                return 0;
            if (!SCALAR(Py_TYPE(item), item) && !check(item, room - 1))
                return 0;
        }
        return 1;
    }
    if (type == &PyList_Type || type == &PyTuple_Type) {
        Py_ssize_t size = Py_SIZE(value);
        PyObject **items = type == &PyList_Type ? ((PyListObject *)value)->ob_item
                                                : ((PyTupleObject *)value)->ob_item;
        for (Py_ssize_t i = 0; i < size; i++) {
            PyObject *item = items[i];
            if (!SCALAR(Py_TYPE(item), item) && !check(item, room - 1))
                return 0;
        }
        return 1;
    }
    return 0;
}

static PyObject *copy(PyObject *value, int room, int *plain);

/* For an item of a copied container: *inner is NULL when the item needs no look inside (the
 * copy holds it already), else a new reference to its copy. -1 with an exception set when out
 * of memory. */
static int
copy_into(PyObject *item, int room, int *plain, PyObject **inner)
{
    if (SCALAR(Py_TYPE(item), item)) {
        *inner = NULL;
        return 0;
    }
    *inner = copy(item, room, plain);
    return *inner == NULL ? -1 : 0;
}

/* A new reference to the copy of value, or NULL with an exception set (out of memory). When
 * value turns out not plain, *plain becomes 0 and the (partial) result is only to be dropped. */
static PyObject *
copy(PyObject *value, int room, int *plain)
{
    PyTypeObject *type = Py_TYPE(value);
    if (SCALAR(type, value))
        return Py_NewRef(value);
    if (type == &PyFloat_Type) {
        if (!isfinite(PyFloat_AS_DOUBLE(value)))
            *plain = 0;
        return Py_NewRef(value);
    }
    if (room <= 0 || !(type == &PyDict_Type || type == &PyList_Type || type == &PyTuple_Type)) {
        *plain = 0;
        return Py_NewRef(Py_None);
    }
    if (type == &PyDict_Type) {
        /* A copy of the whole table first (fast for an exact dict), then each container value
         * replaced by its own copy: replacing the value of a present key keeps the order. */
        PyObject *out = PyDict_Copy(value);
        if (out == NULL)
            return NULL;
        Py_ssize_t pos = 0;
        PyObject *key, *item;
        while (PyDict_Next(out, &pos, &key, &item)) {
            if (Py_TYPE(key) != &PyUnicode_Type) {
                *plain = 0;
                return out;
            }
            PyObject *inner;
            if (copy_into(item, room - 1, plain, &inner) < 0) {
                Py_DECREF(out);
                return NULL;
            }
            if (inner == NULL)
                continue;
            if (!*plain || inner == item) {  /* dropped, or a float */
                Py_DECREF(inner);
                if (!*plain)
                    return out;
                continue;
            }
            int failed = PyDict_SetItem(out, key, inner);
            Py_DECREF(inner);
            if (failed) {
                Py_DECREF(out);
                return NULL;
            }
        }
        return out;
    }
    PyObject *out = type == &PyList_Type ? PyList_GetSlice(value, 0, PY_SSIZE_T_MAX)
                                         : PySequence_List(value);
    if (out == NULL)
        return NULL;
    Py_ssize_t size = PyList_GET_SIZE(out);
    for (Py_ssize_t i = 0; i < size; i++) {
        PyObject *item = PyList_GET_ITEM(out, i), *inner;
        if (copy_into(item, room - 1, plain, &inner) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        if (inner == NULL)
            continue;
        /* The slot's reference to item was the copy's own; value still holds item. */
        PyList_SET_ITEM(out, i, inner);
        Py_DECREF(item);
        if (!*plain)
            return out;
    }
    return out;
}

static int
depth_argument(PyObject *const *args, Py_ssize_t nargs, const char *name, int *depth)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes a value and a depth (%zd arguments given)",
                     name, nargs);
        return -1;
    }
    long given = PyLong_AsLong(args[1]);
    if (given == -1 && PyErr_Occurred())
        return -1;
    /* The walk recurses once per level: a bound keeps it far from the end of a thread's stack. */
    if (given < 0 || given > 1000) {
        PyErr_Format(PyExc_ValueError, "%s(): depth must be between 0 and 1000, not %ld",
                     name, given);
        return -1;
    }
    *depth = (int)given;
    return 0;
}

static PyObject *
is_plain(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    int depth;
    if (depth_argument(args, nargs, "is_plain", &depth) < 0)
        return NULL;
    return PyBool_FromLong(check(args[0], depth));
}

static PyObject *
plain_copy(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    int depth, plain = 1;
    if (depth_argument(args, nargs, "plain_copy", &depth) < 0)
        return NULL;
    PyObject *out = copy(args[0], depth, &plain);
    if (out == NULL || plain)
        return out;
    Py_DECREF(out);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"is_plain", (PyCFunction)(void (*)(void))is_plain, METH_FASTCALL,
     "is_plain(value, depth): whether value holds only exact JSON types, at most depth "
     "containers deep, with no NaN or infinity."},
    {"plain_copy", (PyCFunction)(void (*)(void))plain_copy, METH_FASTCALL,
     "plain_copy(value, depth): a copy of value's containers sharing its leaves, or None "
     "when is_plain(value, depth) is false."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "agui_replay._speedups",
    "Compiled helpers of the StateManager (see agui_replay/_compiled.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModule_Create(&module);
}
