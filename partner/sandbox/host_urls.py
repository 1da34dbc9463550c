"""Addresses of the sandbox's host application page (included by the sandbox at host/)."""

from django.urls import path

from partner.sandbox import host_page

urlpatterns = [
    path("", host_page.host_page, name="host-page"),
    path("resources/<str:resource_id>", host_page.host_resource, name="host-resource"),
]
