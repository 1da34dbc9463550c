"""Form fields that edit a JSON list column of the product as rows instead of raw JSON.

`RowsField` is a model form field backed by a formset: its widget renders one
row per item (with "Add" and "Remove") and reads the posted rows back as a bound
formset; the field is valid when every row is, and cleans to the JSON list that
is stored. So the column, the model's `clean()` and what a push sends stay as they
were: only the editing changes. A row form builds its item on top of the stored
one, so keys a row does not show (an entitlement's `created`, say) survive a save.

`StringListField` is the small version of the same idea: a list of strings typed
into one box, comma-separated or one a line.
"""

import copy

from django import forms
from django.core.exceptions import ValidationError
from django.template.loader import render_to_string


class RowForm(forms.Form):
    """One row: built from a stored item (`initial_from_item`), cleaned back into one (`item`)."""

    help_in_heading = True  # rendered as a table row, its fields' help texts in the column headings

    def __init__(self, *args, index=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.index = index  # 0-based, None for the empty row the "Add" button copies
        if self.help_in_heading:  # a table's cells have no <label>: the column heading names them
            formset_prefix = (self.prefix or "").rpartition("-")[0]
            for name, field in self.fields.items():
                field.widget.attrs.setdefault("aria-label", field.label)
                if field.help_text:
                    field.widget.attrs.setdefault("aria-describedby", f"{formset_prefix}-{name}-help")

    @classmethod
    def initial_from_item(cls, item) -> dict:
        raise NotImplementedError

    def item(self):
        """The stored item this row cleans to (call only when the row is valid)."""
        raise NotImplementedError

    def stored_item(self) -> dict:
        """A copy of the item this row was built from ({} for a new row), to build the edit on."""
        stored = self.initial.get("stored")
        return copy.deepcopy(stored) if isinstance(stored, dict) else {}


class RowsFormSet(forms.BaseFormSet):
    """Rows of one JSON list.

    A row shows what is wrong with one of its fields next to that field; `problems` is for
    what only the whole list shows (a repeat, say): the list's rule of `catalog.validation`,
    run once every row is valid and shown above the rows."""

    template_name_rows = "admin/catalog/product/rows/table.html"
    add_label = "Add a row"

    @classmethod
    def initial_from_items(cls, items) -> list[dict]:
        return [cls.form.initial_from_item(item) for item in (items if isinstance(items, list) else [])]

    def get_form_kwargs(self, index):
        return {**super().get_form_kwargs(index), "index": index}

    def kept_forms(self):
        """The rows that become items: neither removed nor a new row left blank."""
        return [
            form
            for form in self.forms
            if not (self.can_delete and self._should_delete_form(form))
            and (form.index < self.initial_form_count() or form.has_changed())
        ]

    def items(self) -> list:
        return [form.item() for form in self.kept_forms()]

    def problems(self, items) -> list[str]:
        return []

    def clean(self):
        if any(self.errors):
            return
        problems = self.problems(self.items())
        if problems:
            raise ValidationError(problems)

    def has_changed(self):
        return any(form.has_changed() for form in self.forms)

    def render_rows(self) -> str:
        # The project's template engine (the default form renderer only sees app and Django's own templates).
        return render_to_string(self.template_name_rows, {"formset": self})


class RowsWidget(forms.Widget):
    """Renders the rows of a `RowsFormSet` and reads them back from the posted data."""

    def __init__(self, formset_class, attrs=None):
        super().__init__(attrs)
        self.formset_class = formset_class
        self.stored = []  # the column's value before the edit: the rows' starting point
        self._bound = None

    def __deepcopy__(self, memo):
        copied = super().__deepcopy__(memo)
        copied.stored, copied._bound = [], None
        return copied

    def formset(self, name, data=None, files=None):
        initial = self.formset_class.initial_from_items(self.stored)
        return self.formset_class(data, files, prefix=name, initial=initial)

    def value_from_datadict(self, data, files, name):
        # One bound formset per form, so the rows validated are the rows shown with their errors.
        if self._bound is None or self._bound.data is not data:
            self._bound = self.formset(name, data, files)
        return self._bound

    def value_omitted_from_data(self, data, files, name):
        return f"{name}-TOTAL_FORMS" not in data

    def id_for_label(self, id_):
        return None  # the label names the whole table, not one input

    def render(self, name, value, attrs=None, renderer=None):
        formset = value if isinstance(value, RowsFormSet) else self.formset(name)
        return formset.render_rows()


class RowsField(forms.Field):
    """A JSON list column edited as the rows of `formset_class`."""

    formset_class = RowsFormSet
    default_error_messages = {"rows": "Correct the rows marked below."}

    def __init__(self, *, encoder=None, decoder=None, **kwargs):
        # encoder and decoder: what a model JSONField hands its form field; rows need neither.
        kwargs["show_hidden_initial"] = False
        kwargs["widget"] = RowsWidget(self.formset_class)
        super().__init__(**kwargs)

    def prepare_value(self, value):
        return value

    def clean(self, value):
        if not isinstance(value, RowsFormSet) or not value.is_valid():
            raise ValidationError(self.error_messages["rows"], code="rows")
        return value.items()

    def has_changed(self, initial, data):
        return not isinstance(data, RowsFormSet) or data.has_changed()


class StringListField(forms.CharField):
    """A list of strings in one box, comma-separated (or one a line when `separator` is a newline).

    Blank entries are dropped; the column's own rule (the model's `clean()`) judges the rest."""

    separator = ","
    hint = "Separate them with commas."

    def __init__(self, *, encoder=None, decoder=None, **kwargs):
        kwargs["show_hidden_initial"] = False
        if self.separator == "\n":
            kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 3, "cols": 40}))
        help_text = kwargs.get("help_text") or ""
        kwargs["help_text"] = f"{help_text} {self.hint}".strip()
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, list):
            return ("\n" if self.separator == "\n" else ", ").join(str(part) for part in value)
        return value

    def to_python(self, value):
        if isinstance(value, list):
            return value
        text = super().to_python(value)
        return [part.strip() for part in text.split(self.separator) if part.strip()]

    def has_changed(self, initial, data):
        try:
            return self.to_python(data) != (initial or [])
        except ValidationError:
            return True


class StringLinesField(StringListField):
    separator = "\n"
    hint = "One a line."
